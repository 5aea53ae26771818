import Foundation
import HeraldCore
import HeraldTestSupport
import Testing

/// SQL in every string field is inert: refused by validation, or stored and echoed byte for
/// byte; the tables stay whole.
@Suite(.liveAPI) struct InjectionTests {
    static let payloads = [
        "'; DROP TABLE channels; --",
        "\" OR 1=1 --",
        "x'); DELETE FROM subscriptions; --",
        "Robert'); DROP TABLE api_keys;--",
        "1; UPDATE events SET state='done'",
        "%27%3B%20DROP%20TABLE%20events",
        "\\'; SELECT * FROM api_keys; --",
    ]

    /// What exists before the attempts, to check it is all still there after.
    struct Baseline {
        var channel: String
        var token: String
        var keyID: String
        var eventID: String
    }

    func baseline(_ fx: APIFixture) throws -> Baseline {
        let channel = unique("inj")
        try fx.createChannel(channel)
        let token = freshToken()
        #expect(try fx.subscribe(channel, token).status == 201)
        let key = try fx.createKey("publisher", [channel])
        let e = try #require(try fx.publish(channel, update()).json?["event_id"]?.stringValue)
        return Baseline(channel: channel, token: token, keyID: key.id, eventID: e)
    }

    func expectIntact(_ fx: APIFixture, _ b: Baseline) throws {
        let channels = try #require(try fx.admin("GET", "/v1/channels").json?["channels"]?.arrayValue)
        #expect(channels.contains { $0["id"] == .string(b.channel) })
        let c = try #require(try fx.admin("GET", "/v1/channels/\(b.channel)").json)
        #expect(c["subscribers"]?["activity"] == 1)
        #expect(c["state"] == "open")
        let keys = try #require(try fx.admin("GET", "/v1/keys").json?["keys"]?.arrayValue)
        #expect(keys.contains { $0["id"] == .string(b.keyID) && $0["revoked_at"] == .null })
        #expect(try fx.admin("GET", "/v1/channels/\(b.channel)/events/\(b.eventID)").status == 200)
        #expect(try fx.client.send("DELETE", "/v1/channels/\(b.channel)/subscriptions/\(b.token)", token: fx.adminToken).status == 204)
        #expect(try fx.subscribe(b.channel, b.token).status == 201)
        #expect(fx.fanout.storage.isReady())
    }

    @Test func identifiersAndEnumsRefuseSQL() throws {
        let fx = try Live.api()
        let b = try baseline(fx)
        for s in Self.payloads {
            let str = JSON.string(s)
            for body: JSON in [
                ["id": str, "bundle_id": "com.example.app"], ["id": "ok", "bundle_id": str],
                ["id": "ok", "bundle_id": "com.example.app", "mode": str],
                ["id": "ok", "bundle_id": "com.example.app", "environment": str],
                ["id": "ok", "bundle_id": "com.example.app", "storage_policy": str],
            ] {
                let r = try fx.admin("POST", "/v1/channels", json: body)
                #expect(r.status == 422, "\(body)")
                #expect(r.errorCode == "invalid_field")
            }
            #expect(try fx.admin("POST", "/v1/keys", json: ["role": str, "channels": ["a"]]).errorCode == "invalid_field")
            #expect(try fx.admin("POST", "/v1/keys", json: ["role": "publisher", "channels": [str]]).errorCode == "invalid_field")
            #expect(try fx.subscribe(b.channel, freshToken(), body: ["kind": str]).errorCode == "invalid_field")
            #expect(try fx.subscribe(b.channel, freshToken(), body: ["replaces": str]).errorCode == "invalid_token")
            let batch = try fx.admin(
                "POST", "/v1/channels/\(b.channel)/subscriptions:batch", json: ["subscribe": [str], "unsubscribe": [.string(b.token)]])
            #expect(batch.errorCode == "invalid_token")
            let kind = try fx.admin(
                "POST", "/v1/channels/\(b.channel)/subscriptions:batch",
                json: ["subscribe": [["token": .string(freshToken()), "kind": str]]])
            #expect(kind.errorCode == "invalid_field")
            // In paths: percent-encoded, they are ids that do not exist (or are not tokens).
            let enc = segment(s)
            #expect(try fx.admin("GET", "/v1/channels/\(enc)").status == 404)
            #expect(try fx.admin("DELETE", "/v1/channels/\(enc)").status == 404)
            #expect(try fx.admin("DELETE", "/v1/keys/\(enc)").status == 404)
            #expect(try fx.admin("GET", "/v1/channels/\(b.channel)/events/\(enc)").status == 404)
            #expect(try fx.publish(s, update()).status == 404)
            #expect(try fx.subscribe(b.channel, enc).errorCode == "invalid_token")
        }
        try expectIntact(fx, b)
    }

    @Test func freeTextIsStoredAndEchoedVerbatim() throws {
        let fx = try Live.api()
        let b = try baseline(fx)
        for s in Self.payloads {
            let str = JSON.string(s)
            let k = try fx.admin("POST", "/v1/keys", json: ["role": "subscriber", "channels": ["a"], "label": str])
            #expect(k.status == 201)
            #expect(k.json?["label"] == str)
            let id = try #require(k.json?["id"]?.stringValue)
            let listed = try fx.admin("GET", "/v1/keys").json?["keys"]?.arrayValue?.first { $0["id"] == .string(id) }
            #expect(listed?["label"] == str)

            let state: JSON = [s: str, "note": str]
            let body = update(state, extra: ["alert": ["title": str, "body": str]])
            let p = try fx.publish(b.channel, body, headers: [("Idempotency-Key", s)])
            #expect(p.status == 202)
            let eventID = try #require(p.json?["event_id"]?.stringValue)
            let e = try fx.waitFinished(b.channel, eventID)
            #expect(e["state"] == "done")
            let got = try #require(fx.sim.sim.pushes(to: b.token).last?.json)
            #expect(got["aps"]?["content-state"] == state)
            #expect(got["aps"]?["alert"] == ["title": str, "body": str])
            let replay = try fx.publish(b.channel, body, headers: [("Idempotency-Key", s)])
            #expect(replay.status == 200)
            #expect(replay.json?["event_id"] == .string(eventID))
        }
        try expectIntact(fx, b)
    }
}
