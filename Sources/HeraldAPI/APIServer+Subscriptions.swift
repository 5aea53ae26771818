import Foundation
import HeraldCore
import HeraldHTTPServer
import HeraldStore

extension APIServer {
    static func tokenBytes(_ hex: String, field: String = "token") throws -> [UInt8] {
        guard let b = Identifier.tokenBytes(hex) else {
            throw APIError(422, "invalid_token", "'\(field)' must be a push token in hex (32-1024 hex digits, even length)")
        }
        return b
    }

    func register(_ req: HTTPRequest, _ channel: String, _ tokenHex: String) throws -> HTTPResponse {
        let token = try Self.tokenBytes(tokenHex)
        var kind = SubscriptionKind.activity
        var replaces: [UInt8]?
        var expires: Int64?
        if let body = try jsonBody(req, required: false) {
            let o = try object(body)
            try refuseUnknown(o, allowed: ["kind", "replaces", "expires_at"])
            if let k = try string(o, "kind", required: false) {
                guard let v = SubscriptionKind(rawValue: k) else { throw APIError.invalid("kind", "must be activity or push-to-start") }
                kind = v
            }
            if let r = try string(o, "replaces", required: false) { replaces = try Self.tokenBytes(r, field: "replaces") }
            if let e = o["expires_at"], e != .null {
                guard let v = e.intValue, v > 0 else { throw APIError.invalid("expires_at", "must be unix seconds") }
                expires = v
            }
        }
        let (sub, created, ch) = try store.register(channelID: channel, token: token, kind: kind, replaces: replaces, expiresAt: expires)
        if kind == .activity && ch.catchUp && ch.currentEvent != nil && (created || replaces != nil) {
            engine.notifyRegistered(channelID: channel, tokens: [token])
        }
        return .json(created ? 201 : 200, Render.subscription(sub))
    }

    func unregister(_ channel: String, _ tokenHex: String) throws -> HTTPResponse {
        try store.unregister(channelID: channel, token: try Self.tokenBytes(tokenHex))
        return .empty(204)
    }

    func batch(_ req: HTTPRequest, _ channel: String) throws -> HTTPResponse {
        guard !req.body.isEmpty else { throw APIError(400, "invalid_body", "a JSON body is required") }
        try requireJSONContentType(req)
        let body = try BatchBody.decode(req.body)
        let subs = body.subscribe
        let unsubs = body.unsubscribe
        guard subs.count + unsubs.count <= config.maxBatchEntries else {
            throw APIError(413, "request_too_large", "at most \(config.maxBatchEntries) entries per batch; split it")
        }
        var inputs: [SubscriptionInput] = []
        inputs.reserveCapacity(subs.count)
        for (i, e) in subs.enumerated() {
            guard let t = Identifier.tokenBytes(e.token) else {
                throw APIError(422, "invalid_token", "subscribe[\(i)]: not a push token in hex (32-1024 hex digits); nothing was applied")
            }
            var kind = SubscriptionKind.activity
            if let k = e.kind {
                guard let v = SubscriptionKind(rawValue: k) else {
                    throw APIError(422, "invalid_field", "subscribe[\(i)].kind must be activity or push-to-start; nothing was applied")
                }
                kind = v
            }
            if let exp = e.expiresAt, exp <= 0 {
                throw APIError(422, "invalid_field", "subscribe[\(i)].expires_at must be unix seconds; nothing was applied")
            }
            inputs.append(SubscriptionInput(token: t, kind: kind, expiresAt: e.expiresAt))
        }
        var removals: [[UInt8]] = []
        for (i, h) in unsubs.enumerated() {
            guard let t = Identifier.tokenBytes(h) else {
                throw APIError(422, "invalid_token", "unsubscribe[\(i)]: not a push token in hex; nothing was applied")
            }
            removals.append(t)
        }
        let r = try store.batch(channelID: channel, subscribe: inputs, unsubscribe: removals)
        // Late joiners however they register (design delivery 9): each new activity token
        // is owed the channel's current state, unless the batch says it already has it.
        if body.catchUp, let ch = r.channel, ch.catchUp, ch.currentEvent != nil, !r.joined.isEmpty {
            engine.notifyRegistered(channelID: channel, tokens: r.joined)
        }
        return .json(
            200, ["subscribed": .int(Int64(r.subscribed)), "updated": .int(Int64(r.updated)), "unsubscribed": .int(Int64(r.unsubscribed))])
    }
}
