import HeraldCore

/// SQLite behind the storage protocols. One process holds every shard of every channel, so
/// progress is one cursor per event over all of them (`events.cursor`).
extension Store: HeraldStorage {
    public func makeScanner() throws -> SubscriptionScan { try SubscriptionScanner(store: self) }

    public func markSending(
        eventID: String, shards: ShardSet, targets: Int64, passStart: [UInt8], priority: Int,
        completion: @escaping @Sendable (Error?) -> Void
    ) {
        precondition(shards.isAll, "SQLite: one process holds every shard")
        markSending(eventID: eventID, targets: targets, passStart: passStart, priority: priority, completion: completion)
    }

    public func checkpoint(
        eventID: String, shards: ShardSet, cursor: [UInt8], wrapped: Bool, counters: EventCounters,
        completion: @escaping @Sendable (Error?) -> Void
    ) {
        precondition(shards.isAll, "SQLite: one process holds every shard")
        checkpoint(eventID: eventID, cursor: cursor, wrapped: wrapped, counters: counters, completion: completion)
    }

    public func finishEvent(
        eventID: String, shards: ShardSet, state: EventState, counters: EventCounters, reason: String?, supersededBy: String?,
        completion: @escaping @Sendable (Error?) -> Void
    ) {
        precondition(shards.isAll, "SQLite: one process holds every shard")
        finishEvent(eventID: eventID, state: state, counters: counters, reason: reason, supersededBy: supersededBy, completion: completion)
    }

    public func finishEvent(
        eventID: String, shards: ShardSet, state: EventState, counters: EventCounters, reason: String?, supersededBy: String?
    ) throws {
        precondition(shards.isAll, "SQLite: one process holds every shard")
        try finishEvent(eventID: eventID, state: state, counters: counters, reason: reason, supersededBy: supersededBy)
    }

    /// Every shard, for good: nothing else sends from this file.
    public func acquireLease(channelNum: Int64) throws -> Lease? { Lease(channelNum: channelNum, shards: .all) }

    public func releaseLease(_ lease: Lease) {}
}

extension SubscriptionScanner: SubscriptionScan {
    /// Every shard is one range scan; a subset (not used on SQLite, whose one lease covers
    /// every shard) filters the range by the token's shard.
    public func next(
        channelNum: Int64, kind: SubscriptionKind, shards: ShardSet, after: [UInt8], before: [UInt8]?, now: Int64, limit: Int
    ) throws -> TokenRows {
        if shards.isAll { return try next(channelNum: channelNum, kind: kind, after: after, before: before, now: now, limit: limit) }
        var out = TokenRows()
        var cursor = after
        while out.count < limit {
            let rows = try next(channelNum: channelNum, kind: kind, after: cursor, before: before, now: now, limit: limit)
            for t in rows.lazy.filter({ shards.holds(token: $0) }).prefix(limit - out.count) { out.append(t) }
            guard rows.count == limit, let last = rows.last else { break }
            cursor = last
        }
        return out
    }
}
