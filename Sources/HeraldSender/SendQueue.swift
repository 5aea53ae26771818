import HeraldCore

/// The pool's requests waiting for a stream: `express` ones first, each lane in order.
/// Loop-confined.
struct SendQueue {
    private var express = RingBuffer<APNSRequest>(capacity: 256)
    private var bulk = RingBuffer<APNSRequest>(capacity: 4096)

    var isEmpty: Bool { express.isEmpty && bulk.isEmpty }
    var count: Int { express.count + bulk.count }

    /// At the back of its lane. (Consuming, as `prepend`: the caller's reference moves in,
    /// no retain per push.)
    mutating func append(_ r: consuming APNSRequest) {
        if r.express { express.append(r) } else { bulk.append(r) }
    }

    /// At the front of its lane: a request taken out and not sent, or a retry.
    mutating func prepend(_ r: consuming APNSRequest) {
        if r.express { express.prepend(r) } else { bulk.prepend(r) }
    }

    mutating func popFirst() -> APNSRequest? {
        express.popFirst() ?? bulk.popFirst()
    }
}
