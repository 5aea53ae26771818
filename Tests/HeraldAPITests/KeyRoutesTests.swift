import Foundation
import HeraldCore
import HeraldTestSupport
import Testing

@Suite(.liveAPI) struct KeyRoutesTests {
    @Test func aNewKeyShowsItsSecretOnceAndNeverInTheList() throws {
        let fx = try Live.api()
        let r = try fx.admin("POST", "/v1/keys", json: ["role": "publisher", "channels": ["match-*", "flight-AF1"], "label": "feed"])
        #expect(r.status == 201)
        let k = try #require(r.json)
        let id = try #require(k["id"]?.stringValue)
        let secret = try #require(k["secret"]?.stringValue)
        #expect(id.hasPrefix("key_"))
        #expect(secret.hasPrefix("hk_"))
        #expect(k["role"] == "publisher")
        #expect(k["channels"] == ["match-*", "flight-AF1"])
        #expect(k["label"] == "feed")
        #expect(k["revoked_at"] == .null)
        #expect(k["last_used_at"] == .null)
        #expect(k["created_at"]?.intValue != nil)

        let list = try fx.admin("GET", "/v1/keys")
        #expect(list.status == 200)
        let keys = try #require(list.json?["keys"]?.arrayValue)
        let listed = try #require(keys.first { $0["id"] == .string(id) })
        #expect(listed["secret"] == nil)
        #expect(!list.text.contains(secret), "the secret appears nowhere in the list")
        var expected = k.objectValue!
        expected["secret"] = nil
        #expect(listed == .object(expected))
        #expect(keys.allSatisfy { $0["secret"] == nil })
    }

    @Test func theListIsNewestFirst() throws {
        let fx = try Live.api()
        let older = try fx.createKey("subscriber", ["a"])
        usleep(2_000)
        let newer = try fx.createKey("subscriber", ["b"])
        let ids = try #require(try fx.admin("GET", "/v1/keys").json?["keys"]?.arrayValue).compactMap { $0["id"]?.stringValue }
        let i = try #require(ids.firstIndex(of: newer.id))
        let j = try #require(ids.firstIndex(of: older.id))
        #expect(i < j)
    }

    @Test func aRevokedKeyGets401AndShowsWhenItWasRevoked() throws {
        let fx = try Live.api()
        let channel = unique("rev")
        try fx.createChannel(channel)
        let key = try fx.createKey("publisher", [channel])
        #expect(try fx.publish(channel, update(), key: key.secret).status == 202)

        let r = try fx.admin("DELETE", "/v1/keys/\(key.id)")
        #expect(r.status == 200)
        #expect(r.json?["id"] == .string(key.id))
        let revokedAt = try #require(r.json?["revoked_at"]?.intValue)
        #expect(abs(revokedAt - nowSeconds()) < 5)

        let after = try fx.publish(channel, update(), key: key.secret)
        #expect(after.status == 401)
        #expect(after.errorCode == "unauthorized")
        // Revoking again keeps the first time.
        #expect(try fx.admin("DELETE", "/v1/keys/\(key.id)").json?["revoked_at"]?.intValue == revokedAt)
        let listed = try #require(try fx.admin("GET", "/v1/keys").json?["keys"]?.arrayValue?.first { $0["id"] == .string(key.id) })
        #expect(listed["revoked_at"]?.intValue == revokedAt)
    }

    @Test func usingAKeyRecordsLastUsed() throws {
        let fx = try Live.api()
        let channel = unique("used")
        try fx.createChannel(channel)
        let key = try fx.createKey("subscriber", [channel])
        #expect(try fx.subscribe(channel, freshToken(), key: key.secret).status == 201)
        // The touch is written in the background: poll the list.
        let deadline = Date(timeIntervalSinceNow: 10)
        var lastUsed: JSON?
        repeat {
            lastUsed = try fx.admin("GET", "/v1/keys").json?["keys"]?.arrayValue?.first { $0["id"] == .string(key.id) }?["last_used_at"]
            if lastUsed?.intValue != nil { break }
            usleep(10_000)
        } while Date() < deadline
        #expect(lastUsed?.intValue != nil)
    }

    @Test func anAdminKeyNeedsNoChannelsAndActsAsAdmin() throws {
        let fx = try Live.api()
        let r = try fx.admin("POST", "/v1/keys", json: ["role": "admin"])
        #expect(r.status == 201)
        #expect(r.json?["channels"] == [])
        let secret = try #require(r.json?["secret"]?.stringValue)
        let channel = unique("by-admin-key")
        let created = try fx.client.send(
            "POST", "/v1/channels", token: secret, json: ["id": .string(channel), "bundle_id": "com.example.app"])
        #expect(created.status == 201)
        #expect(try fx.client.send("GET", "/v1/keys", token: secret).status == 200)
        #expect(try fx.publish(channel, update(), key: secret).status == 202)
    }

    @Test func revokingAnUnknownKeyIs404() throws {
        let fx = try Live.api()
        let r = try fx.admin("DELETE", "/v1/keys/key_doesnotexist")
        #expect(r.status == 404)
        #expect(r.errorCode == "not_found")
    }

    @Test(arguments: [
        (#"{"channels":["a"]}"#, "missing_field"),
        (#"{"role":"publisher"}"#, "missing_field"),
        (#"{"role":"subscriber","channels":[]}"#, "missing_field"),
        (#"{"role":"owner","channels":["a"]}"#, "invalid_field"),
        (#"{"role":"publisher","channels":"a"}"#, "invalid_field"),
        (#"{"role":"publisher","channels":[1]}"#, "invalid_field"),
        (#"{"role":"publisher","channels":["a b"]}"#, "invalid_field"),
        (#"{"role":"publisher","channels":["**"]}"#, "invalid_field"),
        (#"{"role":"publisher","channels":[""]}"#, "invalid_field"),
        (#"{"role":"publisher","channels":["a"],"label":5}"#, "invalid_field"),
        (#"{"role":"publisher","channels":["a"],"scopes":["x"]}"#, "unknown_field"),
    ])
    func createRefusesBadBodies(body: String, code: String) throws {
        let fx = try Live.api()
        let r = try fx.client.send("POST", "/v1/keys", token: fx.adminToken, body: Array(body.utf8), contentType: "application/json")
        #expect(r.status == 422, "\(body): \(r.text)")
        #expect(r.errorCode == code, "\(body)")
    }

    @Test func aLabelOver200CharactersIsRefused() throws {
        let fx = try Live.api()
        let r = try fx.admin(
            "POST", "/v1/keys", json: ["role": "publisher", "channels": ["a"], "label": .string(String(repeating: "x", count: 201))])
        #expect(r.status == 422)
        #expect(r.errorCode == "invalid_field")
        #expect(
            try fx.admin(
                "POST", "/v1/keys", json: ["role": "publisher", "channels": ["a"], "label": .string(String(repeating: "é", count: 200))]
            ).status == 201)
        // Counted in code points (as JSON Schema's maxLength): one letter under 250 combining
        // accents is one Character to Swift but 251 code points.
        let zalgo = "e" + String(repeating: "\u{0301}", count: 250)
        let z = try fx.admin("POST", "/v1/keys", json: ["role": "publisher", "channels": ["a"], "label": .string(zalgo)])
        #expect(z.status == 422)
        #expect(z.errorCode == "invalid_field")
    }

    @Test func aStarKeyCoversEveryChannel() throws {
        let fx = try Live.api()
        let channel = unique("star")
        try fx.createChannel(channel)
        let key = try fx.createKey("publisher", ["*"])
        #expect(try fx.publish(channel, update(), key: key.secret).status == 202)
    }
}
