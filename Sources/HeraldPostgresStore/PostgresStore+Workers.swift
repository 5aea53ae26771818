import HeraldPostgres
import HeraldStore

/// What several workers on one database share beyond the leases: who is alive (each
/// claims its share of a channel's shards), the progress of an event on some shards, and
/// the feed of new events (`LISTEN/NOTIFY`).
extension PostgresStore: SharedLeases {
    /// This worker is alive for another lease duration (`workers`, the database's clock).
    public func heartbeat() throws { try write { c in try beat(c) } }

    func beat(_ c: PostgresConnection) throws(PostgresError) {
        try c.run(
            """
            INSERT INTO workers (id, expires_at) VALUES ($1, clock_timestamp() + $2::int8 * interval '1 millisecond')
            ON CONFLICT (id) DO UPDATE SET expires_at = EXCLUDED.expires_at
            """, [.text(workerID.rawValue), .int8(leaseMillis)])
    }

    public func countSubscriptions(channelNum: Int64, kind: SubscriptionKind, shards: ShardSet) throws -> Int64 {
        if shards.isAll { return try countSubscriptions(channelNum: channelNum, kind: kind) }
        let now = clock.nowSeconds()
        return try read { c in
            try c.queryValue(
                """
                SELECT count(*) FROM subscriptions
                WHERE channel = $1 AND kind = $2 AND (expires_at IS NULL OR expires_at > $3) AND shard = ANY($4::int8[])
                """, [.int8(channelNum), .int8(kind.storedCode), .int8(now), .array(shards.members.map { .int($0) })])?.int64Value ?? 0
        }
    }

    /// Unfinished events of the channel with their progress on `shards` (`ShardProgress`).
    public func unfinishedEvents(channelNum: Int64, shards: ShardSet, afterSeq: Int64, throughSeq: Int64) throws -> [ShardedEvent] {
        try read { c in
            let events = try c.query(
                """
                \(Self.eventSelect)
                WHERE e.channel = $1 AND e.seq > $2 AND e.seq <= $3 AND e.state = ANY($4::text[]) ORDER BY e.seq
                """, [.int8(channelNum), .int8(afterSeq), .int8(throughSeq), EventState.unfinished.parameter]
            ).map { r throws(PostgresError) in try Self.event(r) }
            guard !events.isEmpty else { return [] }
            var rows: [String: [ShardProgress.Row]] = [:]
            for r in try c.query(
                """
                SELECT event_id, shard, pass_start, cursor, wrapped, done, targets, sent, failed, pruned, retried, skipped,
                       answers, invalid
                FROM checkpoints WHERE event_id = ANY($1::text[]) AND shard = ANY($2::int8[])
                """, [.array(events.map { .text($0.id) }), .array(shards.members.map { .int($0) })])
            {
                var k = EventCounters()
                k.targets = try r.int64("targets")
                k.sent = try r.int64("sent")
                k.failed = try r.int64("failed")
                k.pruned = try r.int64("pruned")
                k.retried = try r.int64("retried")
                k.skipped = try r.int64("skipped")
                k.answers = try r.int64("answers")
                k.invalid = try r.int64("invalid")
                rows[try r.text("event_id"), default: []].append(
                    ShardProgress.Row(
                        shard: Int(try r.int64("shard")), passStart: r["pass_start"]?.byteaValue, cursor: r["cursor"]?.byteaValue,
                        wrapped: try r.bool("wrapped"), done: try r.bool("done"), counters: k))
            }
            return events.compactMap { e in ShardProgress.pick(e, shards: shards, rows: rows[e.id] ?? []) }
        }
    }

    /// Starts the event feed on a connection of its own (see `EventFeed`).
    public func watchEvents(_ notice: @escaping @Sendable (FeedNotice) -> Void) -> (@Sendable () -> Void)? {
        let feed = EventFeed(options: pool.options, worker: workerID.rawValue, notice: notice)
        return { feed.stop() }
    }

    /// `NOTIFY`s of the joiners, `EventFeed.joinedPerNotice` per notification, in one
    /// transaction. A failure is dropped (best effort; the joiner gets the next event).
    public func announceJoined(channelID: String, tokens: [[UInt8]]) {
        guard !tokens.isEmpty else { return }
        _ = try? write { c in
            for start in stride(from: 0, to: tokens.count, by: EventFeed.joinedPerNotice) {
                let chunk = tokens[start..<min(tokens.count, start + EventFeed.joinedPerNotice)]
                try c.notify(
                    EventFeed.channel, payload: EventFeed.Payload.joined(worker: workerID.rawValue, channelID: channelID, tokens: chunk))
            }
        }
    }
}
