import HeraldCore
import HeraldSQL

/// Webhooks and their outbox on SQLite: one process, so the dispatch right is always
/// this process's and ids are committed in order by the single writer.
extension Store: WebhookStorage {
    static let webhookColumns = "id, url, events, channels, created_at_ms, secret_sealed"
    static let deliveryColumns = "id, webhook_id, type, payload, created_at_ms, attempts, not_before_ms"

    static func webhook(from r: Row) -> Webhook {
        func list(_ v: SQLValue) -> [String] { (try? JSON.parse(v.textValue ?? "[]"))?.arrayValue?.compactMap(\.stringValue) ?? [] }
        return Webhook(
            id: r[0].textValue ?? "", url: r[1].textValue ?? "", events: list(r[2]), channels: list(r[3]),
            createdAtMillis: r[4].int64Value ?? 0, sealedSecret: r[5].blobValue ?? [])
    }

    static func delivery(from r: Row) -> StoredWebhookDelivery {
        StoredWebhookDelivery(
            id: r[0].int64Value ?? 0, webhookID: r[1].textValue ?? "", type: r[2].textValue ?? "", payload: r[3].textValue ?? "{}",
            createdAtMillis: r[4].int64Value ?? 0, attempts: Int(r[5].int64Value ?? 0), notBeforeMillis: r[6].int64Value ?? 0)
    }

    public func createWebhook(url: String, events: [String], channels: [String], sealedSecret: [UInt8]) throws -> Webhook {
        let id = Self.newID("whk_")
        let now = clock.nowMillis()
        let ev = JSON.array(events.map { .string($0) }).text
        let ch = JSON.array(channels.map { .string($0) }).text
        return try write { c in
            _ = try c.run(
                "INSERT INTO webhooks (id, url, events, channels, secret_sealed, created_at_ms) VALUES (?, ?, ?, ?, ?, ?)",
                [.text(id), .text(url), .text(ev), .text(ch), .blob(sealedSecret), .integer(now)])
            return Self.webhook(from: try c.queryOne("SELECT \(Self.webhookColumns) FROM webhooks WHERE id = ?", [.text(id)])!)
        }
    }

    public func webhooks() throws -> [Webhook] {
        try read { c in try c.query("SELECT \(Self.webhookColumns) FROM webhooks ORDER BY created_at_ms, id").map(Self.webhook) }
    }

    public func deleteWebhook(id: String) throws -> Webhook? {
        try write { c in
            guard let r = try c.queryOne("SELECT \(Self.webhookColumns) FROM webhooks WHERE id = ?", [.text(id)]) else { return nil }
            _ = try c.run("DELETE FROM webhook_deliveries WHERE webhook_id = ?", [.text(id)])
            _ = try c.run("DELETE FROM webhooks WHERE id = ?", [.text(id)])
            return Self.webhook(from: r)
        }
    }

    public func appendWebhookDeliveries(_ rows: [NewWebhookDelivery]) throws -> [Int64] {
        guard !rows.isEmpty else { return [] }
        return try write { c in
            var ids: [Int64] = []
            for d in rows {
                let r = try c.queryOne(
                    """
                    INSERT INTO webhook_deliveries (webhook_id, type, payload, created_at_ms, not_before_ms)
                    SELECT id, ?, ?, ?, ? FROM webhooks WHERE id = ? RETURNING id
                    """, [.text(d.type), .text(d.payload), .integer(d.createdAtMillis), .integer(d.createdAtMillis), .text(d.webhookID)])
                ids.append(r?[0].int64Value ?? 0)
            }
            return ids
        }
    }

    public func webhookDeliveries(afterID: Int64, limit: Int) throws -> [StoredWebhookDelivery] {
        try read { c in
            try c.query(
                "SELECT \(Self.deliveryColumns) FROM webhook_deliveries WHERE id > ? ORDER BY id LIMIT ?",
                [.integer(afterID), .integer(Int64(limit))]
            ).map(Self.delivery)
        }
    }

    public func rescheduleWebhookDelivery(id: Int64, attempts: Int, notBeforeMillis: Int64) throws {
        try write { c in
            _ = try c.run(
                "UPDATE webhook_deliveries SET attempts = ?, not_before_ms = ? WHERE id = ?",
                [.integer(Int64(attempts)), .integer(notBeforeMillis), .integer(id)])
        }
    }

    public func removeWebhookDeliveries(ids: [Int64]) throws {
        guard !ids.isEmpty else { return }
        try write { c in
            for id in ids { _ = try c.run("DELETE FROM webhook_deliveries WHERE id = ?", [.integer(id)]) }
        }
    }

    public func webhookOutboxStats() throws -> (count: Int, oldestCreatedAtMillis: Int64?) {
        try read { c in
            let r = try c.queryOne("SELECT count(*), min(created_at_ms) FROM webhook_deliveries")
            return (Int(r?[0].int64Value ?? 0), r?[1].int64Value)
        }
    }

    /// Always true: one process uses a SQLite file.
    public func claimWebhookDispatch(holder: String, millis: Int64) throws -> Bool { true }

    public func releaseWebhookDispatch(holder: String) throws {}
}
