import HeraldCore
import HeraldPostgres
import HeraldStore

/// Webhooks and their outbox on PostgreSQL. Outbox inserts take a transaction-level
/// advisory lock first, so ids commit in increasing order across workers (a dispatcher
/// reading `id > last seen` misses none); one worker at a time dispatches, holding the
/// `webhook_dispatch` row (renewed, expiring by the database's clock).
extension PostgresStore: WebhookStorage {
    static let webhookColumns = "id, url, events::text AS events, channels::text AS channels, created_at_ms, secret_sealed"
    static let deliveryColumns = "id, webhook_id, type, payload, created_at_ms, attempts, not_before_ms"
    /// `pg_advisory_xact_lock` key of outbox inserts ("whout" in ASCII).
    static let outboxLockKey: Int64 = 0x77_686f_7574

    static func webhook(_ r: PostgresRow) throws(PostgresError) -> Webhook {
        func list(_ s: String) -> [String] { (try? JSON.parse(s))?.arrayValue?.compactMap(\.stringValue) ?? [] }
        return Webhook(
            id: try r.text("id"), url: try r.text("url"), events: list(try r.text("events")), channels: list(try r.text("channels")),
            createdAtMillis: try r.int64("created_at_ms"), sealedSecret: try r.bytea("secret_sealed"))
    }

    static func delivery(_ r: PostgresRow) throws(PostgresError) -> StoredWebhookDelivery {
        StoredWebhookDelivery(
            id: try r.int64("id"), webhookID: try r.text("webhook_id"), type: try r.text("type"), payload: try r.text("payload"),
            createdAtMillis: try r.int64("created_at_ms"), attempts: Int(try r.int64("attempts")),
            notBeforeMillis: try r.int64("not_before_ms"))
    }

    public func createWebhook(url: String, events: [String], channels: [String], sealedSecret: [UInt8]) throws -> Webhook {
        let id = Self.newID("whk_")
        let now = clock.nowMillis()
        let ev = JSON.array(events.map { .string($0) }).text
        let ch = JSON.array(channels.map { .string($0) }).text
        return try write { c in
            try Self.webhook(
                try c.queryOne(
                    """
                    INSERT INTO webhooks (id, url, events, channels, secret_sealed, created_at_ms)
                    VALUES ($1, $2, $3::jsonb, $4::jsonb, $5, $6) RETURNING \(Self.webhookColumns)
                    """, [.text(id), .text(url), .text(ev), .text(ch), .bytea(sealedSecret), .int8(now)])!)
        }
    }

    public func webhooks() throws -> [Webhook] {
        try read { c in
            try c.query("SELECT \(Self.webhookColumns) FROM webhooks ORDER BY created_at_ms, id COLLATE \"C\"")
                .map { r throws(PostgresError) in try Self.webhook(r) }
        }
    }

    public func deleteWebhook(id: String) throws -> Webhook? {
        try write { c in
            guard let r = try c.queryOne("DELETE FROM webhooks WHERE id = $1 RETURNING \(Self.webhookColumns)", [.text(id)]) else {
                return nil
            }
            return try Self.webhook(r)
        }
    }

    public func appendWebhookDeliveries(_ rows: [NewWebhookDelivery]) throws -> [Int64] {
        guard !rows.isEmpty else { return [] }
        return try write { c in
            _ = try c.query("SELECT pg_advisory_xact_lock($1)", [.int8(Self.outboxLockKey)])
            var ids: [Int64] = []
            for d in rows {
                let r = try c.queryOne(
                    """
                    INSERT INTO webhook_deliveries (webhook_id, type, payload, created_at_ms, not_before_ms)
                    SELECT id, $1, $2, $3, $3 FROM webhooks WHERE id = $4 RETURNING id
                    """, [.text(d.type), .text(d.payload), .int8(d.createdAtMillis), .text(d.webhookID)])
                ids.append(r?["id"]?.int64Value ?? 0)
            }
            return ids
        }
    }

    public func webhookDeliveries(afterID: Int64, limit: Int) throws -> [StoredWebhookDelivery] {
        try read { c in
            try c.query(
                "SELECT \(Self.deliveryColumns) FROM webhook_deliveries WHERE id > $1 ORDER BY id LIMIT $2",
                [.int8(afterID), .int8(Int64(limit))]
            ).map { r throws(PostgresError) in try Self.delivery(r) }
        }
    }

    public func rescheduleWebhookDelivery(id: Int64, attempts: Int, notBeforeMillis: Int64) throws {
        _ = try read { c in
            try c.run(
                "UPDATE webhook_deliveries SET attempts = $1, not_before_ms = $2 WHERE id = $3",
                [.int8(Int64(attempts)), .int8(notBeforeMillis), .int8(id)])
        }
    }

    public func removeWebhookDeliveries(ids: [Int64]) throws {
        guard !ids.isEmpty else { return }
        _ = try read { c in
            try c.run("DELETE FROM webhook_deliveries WHERE id = ANY($1::int8[])", [.array(ids.map { .int8($0) })])
        }
    }

    public func webhookOutboxStats() throws -> (count: Int, oldestCreatedAtMillis: Int64?) {
        try read { c in
            let r = try c.queryOne("SELECT count(*)::int8 AS n, min(created_at_ms) AS oldest FROM webhook_deliveries")
            return (Int(r?["n"]?.int64Value ?? 0), r?["oldest"]?.int64Value)
        }
    }

    public func claimWebhookDispatch(holder: String, millis: Int64) throws -> Bool {
        try read { c in
            try c.queryOne(
                """
                INSERT INTO webhook_dispatch (name, holder, expires_at)
                VALUES ('dispatcher', $1, clock_timestamp() + $2::int8 * interval '1 millisecond')
                ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
                WHERE webhook_dispatch.holder = EXCLUDED.holder OR webhook_dispatch.expires_at <= clock_timestamp()
                RETURNING holder
                """, [.text(holder), .int8(millis)]) != nil
        }
    }

    public func releaseWebhookDispatch(holder: String) throws {
        _ = try read { c in try c.run("DELETE FROM webhook_dispatch WHERE name = 'dispatcher' AND holder = $1", [.text(holder)]) }
    }
}
