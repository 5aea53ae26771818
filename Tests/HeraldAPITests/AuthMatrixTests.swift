import Foundation
import HeraldCore
import HeraldTestSupport
import Testing

/// Every protected route against every kind of wrong caller, and the right ones.
@Suite(.liveAPI) struct AuthMatrixTests {
    enum Role { case admin, subscriber, publisher }

    struct Operation: CustomStringConvertible {
        var method: String
        var path: String
        var body: JSON?
        var role: Role
        var description: String { "\(method) \(path)" }
    }

    /// One request per protected route, aimed at `channel` (and an existing key and event).
    static func operations(channel: String, keyID: String, eventID: String) -> [Operation] {
        let token = freshToken()
        return [
            Operation(
                method: "POST", path: "/v1/channels", body: ["id": .string(unique("authz")), "bundle_id": "com.example.app"], role: .admin),
            Operation(method: "GET", path: "/v1/channels", role: .admin),
            Operation(method: "GET", path: "/v1/channels/\(channel)", role: .admin),
            Operation(method: "DELETE", path: "/v1/channels/\(channel)", role: .admin),
            Operation(method: "POST", path: "/v1/keys", body: ["role": "publisher", "channels": ["x"]], role: .admin),
            Operation(method: "GET", path: "/v1/keys", role: .admin),
            Operation(method: "DELETE", path: "/v1/keys/\(keyID)", role: .admin),
            Operation(method: "PUT", path: "/v1/channels/\(channel)/subscriptions/\(token)", role: .subscriber),
            Operation(method: "DELETE", path: "/v1/channels/\(channel)/subscriptions/\(token)", role: .subscriber),
            Operation(
                method: "POST", path: "/v1/channels/\(channel)/subscriptions:batch", body: ["subscribe": [.string(token)]],
                role: .subscriber),
            Operation(method: "POST", path: "/v1/channels/\(channel)/events", body: update(), role: .publisher),
            Operation(method: "GET", path: "/v1/channels/\(channel)/events/\(eventID)", role: .publisher),
        ]
    }

    struct Setup {
        var channel: String
        var otherChannel: String
        var victimKey: String
        var eventID: String
        var publisher: String
        var subscriber: String
        var otherPublisher: String
        var otherSubscriber: String
        var revoked: String
        var operations: [Operation]
    }

    func setup(_ fx: APIFixture) throws -> Setup {
        let channel = unique("authz-match")
        let other = unique("authz-flight")
        try fx.createChannel(channel)
        try fx.createChannel(other)
        let victim = try fx.createKey("publisher", [channel])
        let eventID = try #require(try fx.publish(channel, update()).json?["event_id"]?.stringValue)
        let revoked = try fx.createKey("publisher", [channel])
        #expect(try fx.admin("DELETE", "/v1/keys/\(revoked.id)").status == 200)
        return Setup(
            channel: channel, otherChannel: other, victimKey: victim.id, eventID: eventID,
            publisher: try fx.createKey("publisher", [String(channel.prefix(12)) + "*"]).secret,
            subscriber: try fx.createKey("subscriber", [channel]).secret,
            otherPublisher: try fx.createKey("publisher", [other]).secret,
            otherSubscriber: try fx.createKey("subscriber", [other, "flight-*"]).secret,
            revoked: revoked.secret,
            operations: Self.operations(channel: channel, keyID: victim.id, eventID: eventID))
    }

    func send(_ fx: APIFixture, _ op: Operation, authorization: String?) throws -> APIResponse {
        try fx.client.send(op.method, op.path, json: op.body, headers: authorization.map { [("Authorization", $0)] } ?? [])
    }

    /// Nothing the refused requests tried happened.
    func expectUntouched(_ fx: APIFixture, _ s: Setup) throws {
        let c = try #require(try fx.admin("GET", "/v1/channels/\(s.channel)").json)
        #expect(c["state"] == "open")
        #expect(c["subscribers"]?["total"] == 0)
        #expect(c["last_event"]?["event_id"] == .string(s.eventID), "no second event")
        let key = try fx.admin("GET", "/v1/keys").json?["keys"]?.arrayValue?.first { $0["id"] == .string(s.victimKey) }
        #expect(key?["revoked_at"] == .null)
    }

    @Test func noKeyAWrongKeyOrARevokedKeyIs401Everywhere() throws {
        let fx = try Live.api()
        let s = try setup(fx)
        let wrong = [
            nil, "Bearer", "Bearer ", "Bearer nope", "Bearer hk_key_abc_def", "Basic \(Data("admin:admin".utf8).base64EncodedString())",
            "Bearer \(fx.adminToken)x", "Bearer \(s.publisher.dropLast())", "Token \(fx.adminToken)", "Bearer \(s.revoked)",
        ]
        for op in s.operations {
            for auth in wrong {
                let r = try send(fx, op, authorization: auth)
                #expect(r.status == 401, "\(op) with \(auth ?? "no key")")
                #expect(r.errorCode == "unauthorized", "\(op)")
                #expect(r.header("www-authenticate")?.hasPrefix("Bearer") == true, "\(op)")
            }
        }
        try expectUntouched(fx, s)
    }

    @Test func keysWithoutTheRightRoleOrScopeAre403() throws {
        let fx = try Live.api()
        let s = try setup(fx)
        for op in s.operations {
            let refused: [(String, String)]
            switch op.role {
            case .admin:
                refused = [("publisher", s.publisher), ("subscriber", s.subscriber)]
            case .subscriber:
                refused = [("publisher of the channel", s.publisher), ("subscriber of another channel", s.otherSubscriber)]
            case .publisher:
                refused = [("subscriber of the channel", s.subscriber), ("publisher of another channel", s.otherPublisher)]
            }
            for (who, key) in refused {
                let r = try send(fx, op, authorization: "Bearer \(key)")
                #expect(r.status == 403, "\(op) by \(who)")
                #expect(r.errorCode == "forbidden", "\(op) by \(who)")
            }
        }
        try expectUntouched(fx, s)
    }

    @Test func scopedKeysDoWhatTheirRoleAllowsOnTheirChannels() throws {
        let fx = try Live.api()
        let s = try setup(fx)
        let token = freshToken()
        let sub = "Bearer \(s.subscriber)"
        #expect(
            try fx.client.send("PUT", "/v1/channels/\(s.channel)/subscriptions/\(token)", headers: [("Authorization", sub)]).status == 201)
        let batch = try fx.client.send(
            "POST", "/v1/channels/\(s.channel)/subscriptions:batch", json: ["subscribe": [.string(freshToken())]],
            headers: [("Authorization", sub)])
        #expect(batch.status == 200)
        #expect(
            try fx.client.send("DELETE", "/v1/channels/\(s.channel)/subscriptions/\(token)", headers: [("Authorization", sub)]).status
                == 204)

        // The publisher key covers the channel through its prefix pattern.
        let pub = "Bearer \(s.publisher)"
        let r = try fx.client.send("POST", "/v1/channels/\(s.channel)/events", json: update(), headers: [("Authorization", pub)])
        #expect(r.status == 202)
        let id = try #require(r.json?["event_id"]?.stringValue)
        #expect(try fx.client.send("GET", "/v1/channels/\(s.channel)/events/\(id)", headers: [("Authorization", pub)]).status == 200)
        // "bearer" in any case.
        #expect(
            try fx.client.send("GET", "/v1/channels/\(s.channel)/events/\(id)", headers: [("Authorization", "bEaReR \(s.publisher)")])
                .status == 200)
    }

    @Test func scopeIsCheckedBeforeTheChannelIsLookedUp() throws {
        let fx = try Live.api()
        let s = try setup(fx)
        // A key cannot learn whether a channel outside its scope exists: 403 either way.
        for channel in [s.otherChannel, unique("does-not-exist")] {
            let r = try fx.client.send(
                "POST", "/v1/channels/\(channel)/events", json: update(), headers: [("Authorization", "Bearer \(s.publisher)")])
            #expect(r.status == 403, "\(channel)")
        }
    }
}
