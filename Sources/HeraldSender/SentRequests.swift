/// The pool's requests in flight, in numbered slots: a request's stream carries its slot
/// number as its tag, and the answer takes it out by that number (issue #12: no request
/// object handed through nghttp2 as an `AnyObject` and cast back per answer). Freed slots
/// are reused last-in first-out, so the table stays as large as the most streams ever in
/// flight at once. Loop-confined.
struct SentRequests {
    private var slots: [APNSRequest?] = []
    private var free: [Int] = []

    /// Requests in flight.
    private(set) var count = 0

    /// The slot the next `put` fills (the same number until a `put` takes it).
    var nextSlot: Int { free.last ?? slots.count }

    /// Puts `r` in slot `i`, which must be `nextSlot`.
    mutating func put(_ r: consuming APNSRequest, at i: Int) {
        if i == slots.count {
            slots.append(r)
        } else {
            precondition(free.last == i, "SentRequests.put: not the next free slot")
            free.removeLast()
            slots[i] = r
        }
        count += 1
    }

    /// Takes the request out of slot `i`; nil when the slot is empty (an unknown tag).
    mutating func take(_ i: Int) -> APNSRequest? {
        guard i >= 0, i < slots.count, let r = slots[i].take() else { return nil }
        free.append(i)
        count -= 1
        return r
    }
}
