import HeraldCore
import HeraldHTTPServer
import HeraldStore
import HeraldWebhooks

/// `POST/GET /v1/webhooks`, `DELETE /v1/webhooks/{id}` (admin; docs/api.md, "Webhooks").
extension APIServer {
    func hub() throws -> WebhookHub {
        guard let webhooks else { throw APIError(503, "unavailable", "webhooks are not configured on this server") }
        return webhooks
    }

    func createWebhook(_ req: HTTPRequest) throws -> HTTPResponse {
        let hub = try hub()
        let o = try object(try jsonBody(req)!)
        try refuseUnknown(o, allowed: ["url", "events", "channels"])
        let url = try string(o, "url", required: true)!
        do {
            _ = try WebhookTarget(url, policy: hub.config.policy)
        } catch {
            throw APIError(422, "invalid_field", error.message)
        }
        guard let list = o["events"]?.arrayValue else {
            throw o["events"] == nil ? APIError.missing("events") : APIError.invalid("events", "must be an array of event types")
        }
        let known = WebhookEvent.Kind.allCases.map(\.rawValue)
        var events: [String] = []
        for e in list {
            guard let s = e.stringValue, known.contains(s) else {
                throw APIError.invalid("events", "entries must be one of \(known.joined(separator: ", "))")
            }
            if !events.contains(s) { events.append(s) }
        }
        guard !events.isEmpty else { throw APIError.invalid("events", "must name at least one event type") }
        var patterns: [String] = []
        if let c = o["channels"], c != .null {
            guard let arr = c.arrayValue else { throw APIError.invalid("channels", "must be an array of channel ids or prefix* patterns") }
            for p in arr {
                guard let s = p.stringValue, !s.isEmpty,
                    s == "*" || Identifier.isValidChannelID(s.hasSuffix("*") ? String(s.dropLast()) : s)
                else { throw APIError.invalid("channels", "entries must be channel ids or prefix* patterns") }
                if !patterns.contains(s) { patterns.append(s) }
            }
        }
        if patterns.isEmpty { patterns = ["*"] }
        let (w, secret) = try hub.create(url: url, events: events, channels: patterns)
        logger.info(
            "api.webhook_created",
            ["webhook_id": .string(w.id), "events": .array(events.map { .string($0) }), "channels": .array(patterns.map { .string($0) })])
        var body = Self.render(w).objectValue!
        body["secret"] = .string(secret)
        return .json(201, .object(body))
    }

    func listWebhooks() throws -> HTTPResponse {
        .json(200, ["webhooks": .array(try hub().list().map(Self.render))])
    }

    func deleteWebhook(_ id: String) throws -> HTTPResponse {
        guard let w = try hub().delete(id: id) else { throw APIError.notFound("no webhook '\(id)'") }
        logger.info("api.webhook_deleted", ["webhook_id": .string(id)])
        return .json(200, Self.render(w))
    }

    /// A webhook as the API shows it (never its secret).
    static func render(_ w: Webhook) -> JSON {
        .object([
            "id": .string(w.id), "url": .string(w.url), "events": .array(w.events.map { .string($0) }),
            "channels": .array(w.channels.map { .string($0) }), "created_at": .int(w.createdAtMillis / 1000),
        ])
    }
}
