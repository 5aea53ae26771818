import HeraldStore

/// An event's progress on some shards, from their checkpoint rows: which of them it is
/// still to reach, and where that part resumes. A pure function (tested without a
/// database).
enum ShardProgress {
    struct Row: Equatable {
        var shard: Int
        var passStart: [UInt8]?
        var cursor: [UInt8]?
        var wrapped: Bool
        var done: Bool
        var counters: EventCounters
    }

    /// The part of `shards` that `event` is still to reach (nil: none) as one run resumes
    /// it: the shards not done whose checkpoints are at the same place as that of the
    /// lowest of them (a shard without a row has not started). Shards two earlier holders
    /// left at different places are not merged — resuming both from the less advanced
    /// would resend the other's tokens past its checkpoint — so the rest come in a later
    /// read. The record carries that part's pass position and the sums of its counters.
    static func pick(_ event: EventRecord, shards: ShardSet, rows: [Row]) -> ShardedEvent? {
        let byShard = Dictionary(rows.map { ($0.shard, $0) }, uniquingKeysWith: { a, _ in a })
        let open = shards.members.filter { byShard[$0]?.done != true }
        guard let first = open.first else { return nil }
        func place(_ s: Int) -> Place {
            byShard[s].map { Place(passStart: $0.passStart, cursor: $0.cursor, wrapped: $0.wrapped) } ?? Place()
        }
        let at = place(first)
        let part = open.filter { place($0) == at }
        var record = event
        var sum = EventCounters()
        for s in part {
            guard let k = byShard[s]?.counters else { continue }
            sum.targets += k.targets
            sum.sent += k.sent
            sum.failed += k.failed
            sum.pruned += k.pruned
            sum.retried += k.retried
            sum.skipped += k.skipped
            sum.answers += k.answers
            sum.invalid += k.invalid
        }
        record.counters = sum
        record.passStart = at.passStart
        record.cursor = at.cursor
        record.wrapped = at.wrapped
        return ShardedEvent(record: record, pending: ShardSet(part))
    }

    struct Place: Equatable {
        var passStart: [UInt8]?
        var cursor: [UInt8]?
        var wrapped = false
    }
}
