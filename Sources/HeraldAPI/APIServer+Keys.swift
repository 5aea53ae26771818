import HeraldCore
import HeraldHTTPServer
import HeraldStore

extension APIServer {
    func createKey(_ req: HTTPRequest) throws -> HTTPResponse {
        let o = try object(try jsonBody(req)!)
        try refuseUnknown(o, allowed: ["role", "channels", "label"])
        let roleText = try string(o, "role", required: true)!
        guard let role = KeyRole(rawValue: roleText) else { throw APIError.invalid("role", "must be publisher, subscriber or admin") }
        var patterns: [String] = []
        if let c = o["channels"] {
            guard let arr = c.arrayValue else { throw APIError.invalid("channels", "must be an array of channel ids or prefix* patterns") }
            for p in arr {
                guard let s = p.stringValue, !s.isEmpty,
                    s == "*" || Identifier.isValidChannelID(s.hasSuffix("*") ? String(s.dropLast()) : s)
                else { throw APIError.invalid("channels", "entries must be channel ids or prefix* patterns") }
                patterns.append(s)
            }
        }
        if role != .admin && patterns.isEmpty {
            throw APIError(422, "missing_field", "'channels' is required for \(role.rawValue) keys (ids or prefix* patterns)")
        }
        let label = try string(o, "label", required: false)
        // Code points, not Characters: one Character can carry any number of combining marks.
        if let label, label.unicodeScalars.count > 200 { throw APIError.invalid("label", "must be at most 200 characters") }
        let (key, secret) = try store.createKey(role: role, channels: patterns, label: label)
        logger.info(
            "api.key_created",
            ["key_id": .string(key.id), "role": .string(role.rawValue), "channels": .array(patterns.map { .string($0) })])
        var body = Render.key(key).objectValue!
        body["secret"] = .string(secret)
        return .json(201, .object(body))
    }

    func listKeys() throws -> HTTPResponse {
        .json(200, ["keys": .array(try store.keys().map(Render.key))])
    }

    func revokeKey(_ id: String) throws -> HTTPResponse {
        let k = try store.revokeKey(id: id)
        logger.info("api.key_revoked", ["key_id": .string(id)])
        return .json(200, Render.key(k))
    }
}
