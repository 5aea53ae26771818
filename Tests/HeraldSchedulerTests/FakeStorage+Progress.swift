import HeraldCore

@testable import HeraldStore

/// One progress record per event, as the fake keeps it, except on `SharedLease.fresh`
/// shards, whose events read as not started there.
extension FakeStorage {
    func unfinishedEvents(channelNum: Int64, shards: ShardSet, afterSeq: Int64, throughSeq: Int64) throws -> [ShardedEvent] {
        let fresh = shared?.fresh ?? .empty
        return try unfinishedEvents(channelNum: channelNum, afterSeq: afterSeq, throughSeq: throughSeq).map { e in
            guard !fresh.isEmpty, fresh.isSuperset(of: shards) else { return ShardedEvent(record: e, pending: shards) }
            var r = e
            r.cursor = nil
            r.passStart = nil
            r.wrapped = false
            r.counters = EventCounters()
            return ShardedEvent(record: r, pending: shards)
        }
    }
}

/// Renewals in one call per tick, counted.
extension FakeStorage {
    func renewLeases(_ leases: [Lease]) throws -> [Int64: Lease?] {
        state.withLock { $0.shared?.renewalCalls += 1 }
        var renewed: [Int64: Lease?] = [:]
        for l in leases { renewed[l.channelNum] = .some(try renewLease(l)) }
        return renewed
    }
}
