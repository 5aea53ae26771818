import HeraldCore
import HeraldSQL

/// Webhook reports on SQLite, written in the transaction of the fact they report.
extension Store: WebhookReporting {
    /// Inserts a report while some webhook wants `type` (the SQL does the check, so a
    /// Herald without webhooks writes nothing more).
    static func report(_ c: SQLiteConnection, type: String, channelSQL: String, _ channelArg: SQLValue, payload: String, now: Int64)
        throws
    {
        _ = try c.run(
            """
            INSERT INTO webhook_reports (type, channel, payload, created_at_ms)
            SELECT ?, (\(channelSQL)), ?, ?
            WHERE EXISTS (SELECT 1 FROM webhooks w, json_each(w.events) e WHERE e.value = ?) AND (\(channelSQL)) IS NOT NULL
            """, [.text(type), channelArg, .text(payload), .integer(now), .text(type), channelArg])
    }

    public func pruneReporting(
        channelNum: Int64, _ items: [(kind: SubscriptionKind, token: [UInt8], beforeMillis: Int64)], reason: String
    ) throws -> Int {
        guard !items.isEmpty else { return 0 }
        let now = clock.nowMillis()
        return try write { c in
            let d = try c.cached("DELETE FROM subscriptions WHERE channel = ? AND kind = ? AND token = ? AND registered_at_ms < ?")
            var removed: [JSON] = []
            for i in items {
                d.reset()
                try d.bind(1, int64: channelNum)
                try d.bind(2, int64: i.kind.code)
                try d.bind(3, blob: i.token)
                try d.bind(4, int64: i.beforeMillis)
                if try d.run() > 0 { removed.append(.string(Hex.encode(i.token))) }
            }
            if !removed.isEmpty {
                let payload = JSON.object(["tokens": .array(removed), "reason": .string(reason)]).text
                try Self.report(
                    c, type: "subscription.pruned", channelSQL: "SELECT id FROM channels WHERE num = ?", .integer(channelNum),
                    payload: payload, now: now)
            }
            return removed.count
        }
    }

    public func finishEventReporting(
        eventID: String, shards: ShardSet, state: EventState, counters: EventCounters, reason: String?, supersededBy: String?,
        completion: @escaping @Sendable (Error?) -> Void
    ) {
        precondition(shards.isAll, "SQLite: one process holds every shard")
        let now = clock.nowMillis()
        let finish = Self.finishJob(
            eventID: eventID, state: state, counters: counters, reason: reason, supersededBy: supersededBy, now: now)
        let payload = JSON.object(["event_id": .string(eventID)]).text
        queue(
            { c in
                try finish(c)
                // Reported by the finish that ended the event (one already finished is left as it
                // was, with its own time).
                try Self.report(
                    c, type: "event.finished",
                    channelSQL: """
                        SELECT ch.id FROM events e JOIN channels ch ON ch.num = e.channel
                        WHERE e.id = ? AND e.finished_at_ms = \(now) AND e.state IN (\(EventState.finished.sqlList))
                        """, .text(eventID), payload: payload, now: now)
            }, completion)
    }

    public func closeChannelReporting(id: String, why: String) throws -> (Channel, [String]) {
        let now = clock.nowMillis()
        return try write { c in
            let (ch, stopped, closed) = try Self.close(c, id: id, now: now)
            guard closed else { return (ch, stopped) }
            try Self.report(
                c, type: "channel.closed", channelSQL: "SELECT id FROM channels WHERE num = ?", .integer(ch.num),
                payload: JSON.object(["channel": .string(id), "why": .string(why)]).text, now: now)
            for eventID in stopped { try Self.reportFinished(c, eventID: eventID, channelNum: ch.num, now: now) }
            return (ch, stopped)
        }
    }

    public func recordWebhookReport(type: String, channel: String, payload: String) throws {
        let now = clock.nowMillis()
        try write { c in try Self.report(c, type: type, channelSQL: "SELECT ?", .text(channel), payload: payload, now: now) }
    }

    public func webhookReportCount() throws -> Int {
        try read { c in Int(try c.queryValue("SELECT count(*) FROM webhook_reports")?.int64Value ?? 0) }
    }

    public func convertWebhookReports(limit: Int, _ convert: @escaping @Sendable ([WebhookReport]) -> [NewWebhookDelivery]) throws -> Int {
        try write { c in
            let reports = try c.query(
                "SELECT id, type, channel, payload, created_at_ms FROM webhook_reports ORDER BY id LIMIT ?", [.integer(Int64(limit))]
            ).map { r in
                WebhookReport(
                    id: r[0].int64Value ?? 0, type: r[1].textValue ?? "", channel: r[2].textValue ?? "", payload: r[3].textValue ?? "{}",
                    createdAtMillis: r[4].int64Value ?? 0)
            }
            guard let last = reports.last else { return 0 }
            for d in convert(reports) {
                _ = try c.run(
                    """
                    INSERT INTO webhook_deliveries (webhook_id, type, payload, created_at_ms, not_before_ms)
                    SELECT id, ?, ?, ?, ? FROM webhooks WHERE id = ?
                    """, [.text(d.type), .text(d.payload), .integer(d.createdAtMillis), .integer(d.createdAtMillis), .text(d.webhookID)])
            }
            _ = try c.run("DELETE FROM webhook_reports WHERE id <= ?", [.integer(last.id)])
            return reports.count
        }
    }
}
