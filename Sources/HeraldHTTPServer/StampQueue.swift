/// Connections in the order they entered a state (oldest first), for `ConnectionBook`.
/// Entries are never removed when a connection leaves the state: the book tells which are
/// still current (`popOldest(where:)` skips the others), and `push` drops the stale ones
/// once they outnumber the live connections, so the queue stays O(connections) and every
/// operation is amortised O(1).
struct StampQueue {
    struct Entry: Equatable {
        var stamp: UInt64
        var id: ConnectionID
    }

    private var entries: [Entry] = []
    private var head = 0

    /// Entries held, stale ones included.
    var count: Int { entries.count - head }

    /// Appends `entry` (its stamp is above every earlier one). With more than twice `live`
    /// entries (plus a margin), keeps only those `isCurrent` says are.
    mutating func push(_ entry: Entry, live: Int, isCurrent: (Entry) -> Bool) {
        entries.append(entry)
        if count > 2 * live + 64 {
            entries = entries[head...].filter(isCurrent)
            head = 0
        }
    }

    /// The oldest current entry, left in place (stale ones before it are dropped).
    mutating func peekOldest(where isCurrent: (Entry) -> Bool) -> Entry? {
        while head < entries.count {
            if isCurrent(entries[head]) { return entries[head] }
            head += 1
        }
        return nil
    }

    /// Removes and returns the oldest current entry's connection, dropping stale ones before
    /// it; nil when none is current.
    mutating func popOldest(where isCurrent: (Entry) -> Bool) -> ConnectionID? {
        defer {
            if head > 64 && head * 2 > entries.count {
                entries.removeFirst(head)
                head = 0
            }
        }
        while head < entries.count {
            let e = entries[head]
            head += 1
            if isCurrent(e) { return e.id }
        }
        return nil
    }
}
