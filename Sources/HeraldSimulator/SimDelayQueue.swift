import HeraldNet

/// The answers the latency fault holds back on one connection, in the order they were
/// decided, each with the time it is due: one timer per connection for the earliest (not a
/// timer and a closure per answer), and each answer's fields copied into storage that is
/// reused once it is sent (no allocation per answer once warm). A pure value: the time is
/// the caller's, so tests drive it without a loop.
///
/// The latency is one value per connection at a time, so dues only grow; when the fault is
/// lowered, answers decided after the change wait for the ones before them (a connection
/// answers in order), never longer than the old latency.
struct SimDelayQueue {
    struct Slot {
        var due: UInt64 = 0
        var streamID: Int32 = 0
        var status = 0
        var fields = HeaderList()
        var body: [UInt8] = []
    }

    private var slots: [Slot] = []
    private var head = 0
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    /// When the earliest answer is due (nil: none waiting).
    var nextDue: UInt64? { count == 0 ? nil : slots[head].due }

    /// Holds an answer until `due`; `fields` are copied.
    mutating func push(due: UInt64, streamID: Int32, status: Int, fields: HeaderList, body: [UInt8]) {
        if count == slots.count { grow() }
        let i = (head + count) % slots.count
        let earlier = count == 0 ? due : slots[(head + count - 1) % slots.count].due
        slots[i].due = max(due, earlier)
        slots[i].streamID = streamID
        slots[i].status = status
        slots[i].fields.removeAll()
        slots[i].fields.append(contentsOf: fields)
        slots[i].body = body
        count += 1
    }

    /// Hands every answer due by `now` to `send`, earliest first, and forgets it.
    mutating func popDue(now: UInt64, _ send: (_ streamID: Int32, _ status: Int, _ fields: HeaderList, _ body: [UInt8]) -> Void) {
        while count > 0 && slots[head].due <= now {
            send(slots[head].streamID, slots[head].status, slots[head].fields, slots[head].body)
            if !slots[head].body.isEmpty { slots[head].body = [] }
            head = (head + 1) % slots.count
            count -= 1
        }
        if count == 0 { head = 0 }
    }

    /// How long after the earliest answer is due its timer fires (nanoseconds): a tenth of
    /// the latency, at most a millisecond. The answers due by then go out together.
    static func slackNanos(latency seconds: Double) -> UInt64 {
        seconds > 0 ? UInt64(min(0.001, seconds / 10) * 1e9) : 0
    }

    /// Doubles the ring, keeping the order (and the slots' storage).
    private mutating func grow() {
        var bigger: [Slot] = []
        bigger.reserveCapacity(max(16, slots.count * 2))
        for k in 0..<slots.count { bigger.append(slots[(head + k) % slots.count]) }
        while bigger.count < max(16, slots.count * 2) { bigger.append(Slot()) }
        slots = bigger
        head = 0
    }
}
