import HeraldCore
import HeraldPostgres
import HeraldStore

/// Webhook reports on PostgreSQL, written in the transaction of the fact they report.
extension PostgresStore: WebhookReporting {
    /// Inserts a report while some webhook wants `type`; `channel` is SQL giving the
    /// channel's id from `$1` (the report is skipped when it gives none).
    static func report(_ c: PostgresConnection, type: String, channelSQL: String, _ arg: PostgresValue, payload: String, now: Int64)
        throws(PostgresError)
    {
        try c.run(
            """
            INSERT INTO webhook_reports (type, channel, payload, created_at_ms)
            SELECT $2, ch, $3, $4 FROM (\(channelSQL)) AS x(ch)
            WHERE ch IS NOT NULL AND EXISTS (SELECT 1 FROM webhooks WHERE events ? $2)
            """, [arg, .text(type), .text(payload), .int8(now)])
    }

    public func pruneReporting(
        channelNum: Int64, _ items: [(kind: SubscriptionKind, token: [UInt8], beforeMillis: Int64)], reason: String
    ) throws -> Int {
        guard !items.isEmpty else { return 0 }
        let now = clock.nowMillis()
        return try write { c in
            let removed = try c.query(
                """
                DELETE FROM subscriptions s USING unnest($2::int8[], $3::bytea[], $4::int8[], $5::int8[]) AS u(kind, token, before_ms, shard)
                WHERE s.channel = $1 AND s.kind = u.kind AND s.shard = u.shard AND s.token = u.token AND s.registered_at_ms < u.before_ms
                RETURNING s.token
                """, Self.pruneArguments(channelNum, items)
            ).compactMap { $0["token"]?.byteaValue }
            if !removed.isEmpty {
                let payload = JSON.object(["tokens": .array(removed.map { .string(Hex.encode($0)) }), "reason": .string(reason)]).text
                try Self.report(
                    c, type: "subscription.pruned", channelSQL: "SELECT id FROM channels WHERE num = $1", .int8(channelNum),
                    payload: payload, now: now)
            }
            return removed.count
        }
    }

    public func finishEventReporting(
        eventID: String, shards: ShardSet, state: EventState, counters: EventCounters, reason: String?, supersededBy: String?,
        completion: @escaping @Sendable (Error?) -> Void
    ) {
        let now = clock.nowMillis()
        let payload = JSON.object(["event_id": .string(eventID)]).text
        queue(
            { [self] c in
                try finish(
                    c, eventID: eventID, shards: shards, state: state, counters: counters, reason: reason,
                    supersededBy: supersededBy, now: now)
                // Reported by the finish that ended the event (its last shard, or a stop).
                try Self.report(
                    c, type: "event.finished",
                    channelSQL: """
                        SELECT ch.id FROM events e JOIN channels ch ON ch.num = e.channel
                        WHERE e.id = $1 AND e.finished_at_ms = \(now) AND e.state IN (\(EventState.finished.map { "'\($0.rawValue)'" }.joined(separator: ", ")))
                        """, .text(eventID), payload: payload, now: now)
            }, completion)
    }

    public func closeChannelReporting(id: String, why: String) throws -> (Channel, [String]) {
        let now = clock.nowMillis()
        return try write { c in
            let (ch, stopped, closed) = try Self.close(c, id: id, now: now)
            guard closed else { return (ch, stopped) }
            try Self.report(
                c, type: "channel.closed", channelSQL: "SELECT id FROM channels WHERE num = $1", .int8(ch.num),
                payload: JSON.object(["channel": .string(id), "why": .string(why)]).text, now: now)
            for eventID in stopped { try Self.reportFinished(c, eventID: eventID, channelNum: ch.num, now: now) }
            return (ch, stopped)
        }
    }

    public func recordWebhookReport(type: String, channel: String, payload: String) throws {
        let now = clock.nowMillis()
        try write { c in try Self.report(c, type: type, channelSQL: "SELECT $1::text", .text(channel), payload: payload, now: now) }
    }

    public func webhookReportCount() throws -> Int {
        try read { c in Int(try c.queryValue("SELECT count(*)::int8 FROM webhook_reports")?.int64Value ?? 0) }
    }

    public func convertWebhookReports(limit: Int, _ convert: @escaping @Sendable ([WebhookReport]) -> [NewWebhookDelivery]) throws -> Int {
        try write { c in
            let reports = try c.query(
                "SELECT id, type, channel, payload, created_at_ms FROM webhook_reports ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED",
                [.int8(Int64(limit))]
            ).map { r throws(PostgresError) in
                WebhookReport(
                    id: try r.int64("id"), type: try r.text("type"), channel: try r.text("channel"), payload: try r.text("payload"),
                    createdAtMillis: try r.int64("created_at_ms"))
            }
            guard !reports.isEmpty else { return 0 }
            let rows = convert(reports)
            if !rows.isEmpty {
                _ = try c.query("SELECT pg_advisory_xact_lock($1)", [.int8(Self.outboxLockKey)])
                for d in rows {
                    try c.run(
                        """
                        INSERT INTO webhook_deliveries (webhook_id, type, payload, created_at_ms, not_before_ms)
                        SELECT id, $1, $2, $3, $3 FROM webhooks WHERE id = $4
                        """, [.text(d.type), .text(d.payload), .int8(d.createdAtMillis), .text(d.webhookID)])
                }
            }
            try c.run("DELETE FROM webhook_reports WHERE id = ANY($1::int8[])", [.array(reports.map { .int8($0.id) })])
            return reports.count
        }
    }
}
