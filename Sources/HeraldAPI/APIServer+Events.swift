import HeraldAPNS
import HeraldCore
import HeraldHTTPServer
import HeraldStore

extension APIServer {
    func publish(_ req: HTTPRequest, _ channel: String) throws -> HTTPResponse {
        guard req.body.count <= config.maxPublishBodyBytes else {
            throw APIError(413, "request_too_large", "a publish body is at most \(config.maxPublishBodyBytes) bytes")
        }
        let json = try jsonBody(req)!
        let event: LiveActivityEvent
        do {
            event = try LiveActivityEvent.validate(json)
        } catch {
            throw APIError(error)
        }
        let dryRun = try Self.dryRun(req.query["dry_run"])
        var key = req.header("idempotency-key")
        if let k = key {
            key = k.trimmingCharacters(in: .whitespaces)
            guard (1...255).contains(key!.utf8.count) else {
                throw APIError(400, "invalid_field", "Idempotency-Key must be 1-255 characters")
            }
        }
        try refuseLost(channel)
        let r = try store.publish(channelID: channel, event: event, idempotencyKey: key, dryRun: dryRun)
        if dryRun {
            return .json(
                200,
                [
                    "dry_run": true, "event": .string(event.kind.rawValue), "payload": (try? JSON.parse(r.event.payload)) ?? .null,
                    "payload_bytes": .int(Int64(r.event.payload.count)), "limit_bytes": .int(Int64(r.limit)),
                    "targets": .int(r.targets), "broadcast": .bool(r.event.broadcastState == .pending),
                    "priority": .int(Int64(r.event.priority)), "aps_timestamp": .int(r.event.apsTimestamp),
                ])
        }
        if r.created {
            engine.notifyCommitted(r.event, channel: r.channel)
            logger.info(
                "api.event_accepted",
                [
                    "channel": .string(channel), "event_id": .string(r.event.id), "seq": .int(r.event.seq),
                    "kind": .string(event.kind.rawValue),
                    "bytes": .int(Int64(r.event.payload.count)),
                ])
        }
        let body: JSON = [
            "event_id": .string(r.event.id), "seq": .int(r.event.seq), "state": .string(r.event.state.rawValue),
            "aps_timestamp": .int(r.event.apsTimestamp), "channel": .string(channel),
        ]
        return .json(r.created ? 202 : 200, body, headers: [("location", "/v1/channels/\(channel)/events/\(r.event.id)")])
    }

    /// `?dry_run`: a bare flag or true/1/yes is a dry run, false/0/no (or absent) is not.
    /// Anything else is refused: a value the server does not understand must never turn
    /// into a real publish to every subscriber.
    static func dryRun(_ value: String?) throws -> Bool {
        switch value?.lowercased() {
        case nil, "false", "0", "no": return false
        case "", "true", "1", "yes": return true
        default: throw APIError(400, "invalid_field", "dry_run must be true or false")
        }
    }
}
