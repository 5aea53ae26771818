/// A double-ended queue on a growable ring (the standard library has none, and
/// swift-collections cannot be fetched here). O(1) amortised at both ends.
@frozen
public struct RingBuffer<Element> {
    // Inlinable: the pool's queue lives in another module, where an unspecialised generic
    // would cost a witness-table call per operation.
    @usableFromInline var storage: [Element?]
    @usableFromInline var head = 0
    /// Elements held. (Settable only for inlining; treat as read-only.)
    public var count = 0

    @inlinable
    public init(capacity: Int = 16) {
        storage = Array(repeating: nil, count: Swift.max(4, capacity))
    }

    @inlinable
    public var isEmpty: Bool { count == 0 }

    @inlinable
    public var first: Element? { count == 0 ? nil : storage[head] }

    @inlinable
    mutating func grow() {
        var next = [Element?](repeating: nil, count: storage.count * 2)
        for i in 0..<count { next[i] = storage[(head + i) % storage.count] }
        storage = next
        head = 0
    }

    @inlinable
    public mutating func append(_ e: consuming Element) {
        if count == storage.count { grow() }
        storage[(head + count) % storage.count] = e
        count += 1
    }

    @inlinable
    public mutating func prepend(_ e: consuming Element) {
        if count == storage.count { grow() }
        head = (head - 1 + storage.count) % storage.count
        storage[head] = e
        count += 1
    }

    @inlinable
    @discardableResult
    public mutating func popFirst() -> Element? {
        guard count > 0 else { return nil }
        // Moved out of its place (a copy and a store of nil cost a retain and a release).
        let e = storage[head].take()
        head = (head + 1) % storage.count
        count -= 1
        return e
    }

    /// Removes and returns every element, front to back.
    @inlinable
    public mutating func drain() -> [Element] {
        var out: [Element] = []
        out.reserveCapacity(count)
        while let e = popFirst() { out.append(e) }
        return out
    }
}

/// Carries a non-Sendable value across a thread hop whose safety the caller ensures (an
/// object confined to an event loop, sent to that same loop).
public struct UncheckedBox<T>: @unchecked Sendable {
    public let value: T
    public init(_ value: T) { self.value = value }
}
