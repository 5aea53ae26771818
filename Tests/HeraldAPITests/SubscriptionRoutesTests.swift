import Foundation
import HeraldCore
import HeraldTestSupport
import Testing

@Suite(.liveAPI) struct SubscriptionRoutesTests {
    func count(_ fx: APIFixture, _ channel: String) throws -> JSON? {
        try fx.admin("GET", "/v1/channels/\(channel)").json?["subscribers"]
    }

    @Test func putIs201ThenAnIdempotent200() throws {
        let fx = try Live.api()
        let channel = unique("sub")
        try fx.createChannel(channel)
        let token = freshToken()
        let first = try fx.subscribe(channel, token)
        #expect(first.status == 201)
        let s = try #require(first.json)
        #expect(s["channel"] == .string(channel))
        #expect(s["token"] == .string(token))
        #expect(s["kind"] == "activity")
        let registered = try #require(s["registered_at"]?.intValue)
        #expect(abs(registered - nowSeconds()) < 5)
        // Activity subscriptions live 12 h at most.
        let expires = try #require(s["expires_at"]?.intValue)
        #expect(expires > nowSeconds() + 12 * 3600 - 10 && expires <= nowSeconds() + 12 * 3600)

        let again = try fx.subscribe(channel, token)
        #expect(again.status == 200)
        #expect(try count(fx, channel) == ["activity": 1, "push_to_start": 0, "total": 1])
    }

    @Test func anUppercaseTokenIsTheSameSubscription() throws {
        let fx = try Live.api()
        let channel = unique("case")
        try fx.createChannel(channel)
        let token = freshToken()
        #expect(try fx.subscribe(channel, token).status == 201)
        let upper = try fx.subscribe(channel, token.uppercased())
        #expect(upper.status == 200)
        #expect(upper.json?["token"] == .string(token), "tokens are echoed in lower-case hex")
    }

    @Test func pushToStartAndExpiryAreKept() throws {
        let fx = try Live.api()
        let channel = unique("p2s")
        try fx.createChannel(channel)
        let exp = nowSeconds() + 7 * 24 * 3600
        let r = try fx.subscribe(channel, freshToken(), body: ["kind": "push-to-start", "expires_at": .int(exp)])
        #expect(r.status == 201)
        #expect(r.json?["kind"] == "push-to-start")
        #expect(r.json?["expires_at"]?.intValue == exp, "push-to-start tokens are not capped at 12 h")
        let noExpiry = try fx.subscribe(channel, freshToken(), body: ["kind": "push-to-start"])
        #expect(noExpiry.json?["expires_at"] == .null)
        #expect(try count(fx, channel) == ["activity": 0, "push_to_start": 2, "total": 2])
    }

    @Test func replacesRotatesTheTokenInOneStep() throws {
        let fx = try Live.api()
        let channel = unique("rotate")
        try fx.createChannel(channel)
        let old = freshToken()
        let new = freshToken()
        #expect(try fx.subscribe(channel, old).status == 201)
        let r = try fx.subscribe(channel, new, body: ["replaces": .string(old)])
        #expect(r.status == 201)
        #expect(try count(fx, channel)?["total"] == 1)
        let gone = try fx.client.send("DELETE", "/v1/channels/\(channel)/subscriptions/\(old)", token: fx.adminToken)
        #expect(gone.status == 404, "the old token was removed")
        #expect(try fx.client.send("DELETE", "/v1/channels/\(channel)/subscriptions/\(new)", token: fx.adminToken).status == 204)
    }

    @Test func aLateJoinerIsSentTheCurrentStateAtOnce() throws {
        let fx = try Live.api()
        let channel = unique("late")
        try fx.createChannel(channel)
        let p = try fx.publish(channel, update(["minute": 23]))
        #expect(try fx.waitFinished(channel, try #require(p.json?["event_id"]?.stringValue))["state"] == "done")
        let token = freshToken()
        #expect(try fx.subscribe(channel, token).status == 201)
        let deadline = Date(timeIntervalSinceNow: 10)
        while fx.sim.sim.pushes(to: token).isEmpty && Date() < deadline { usleep(5_000) }
        let got = fx.sim.sim.pushes(to: token)
        #expect(got.count == 1)
        #expect(got.first?.json?["aps"]?["content-state"] == ["minute": 23])
        #expect(got.first?.timestamp == p.json?["aps_timestamp"]?.intValue)
    }

    /// Design delivery 9: a late joiner is a late joiner however it registers. Every new
    /// activity token of a batch gets the current state once; a token already there, a
    /// push-to-start token and a token the same batch removes get nothing; the next event
    /// then reaches them all, after the catch-up.
    @Test func lateJoinersRegisteredInABatchAreSentTheCurrentState() throws {
        let fx = try Live.api()
        let channel = unique("batchlate")
        try fx.createChannel(channel)
        let existing = freshToken()
        #expect(try fx.subscribe(channel, existing).status == 201)
        let p = try fx.publish(channel, update(["minute": 23]))
        #expect(try fx.waitFinished(channel, try #require(p.json?["event_id"]?.stringValue))["state"] == "done")

        let joiners = (0..<5).map { _ in freshToken() }
        let starter = freshToken()
        let leaving = freshToken()
        let body: JSON = [
            "subscribe": .array(
                joiners.map { .string($0) } + [.string(existing), .string(leaving)]
                    + [.object(["token": .string(starter), "kind": "push-to-start"])]),
            "unsubscribe": [.string(leaving)],
        ]
        let r = try fx.admin("POST", "/v1/channels/\(channel)/subscriptions:batch", json: body)
        #expect(r.json == ["subscribed": 7, "updated": 1, "unsubscribed": 1])
        let deadline = Date(timeIntervalSinceNow: 10)
        while joiners.contains(where: { fx.sim.sim.pushes(to: $0).isEmpty }) && Date() < deadline { usleep(5_000) }
        for t in joiners {
            let got = fx.sim.sim.pushes(to: t)
            #expect(got.count == 1)
            #expect(got.first?.json?["aps"]?["content-state"] == ["minute": 23])
            #expect(got.first?.timestamp == p.json?["aps_timestamp"]?.intValue)
        }
        let next = try fx.publish(channel, update(["minute": 24]))
        #expect(try fx.waitFinished(channel, try #require(next.json?["event_id"]?.stringValue))["state"] == "done")
        for t in joiners {
            #expect(fx.sim.sim.pushes(to: t).compactMap { $0.json?["aps"]?["content-state"] } == [["minute": 23], ["minute": 24]])
        }
        #expect(fx.sim.sim.pushes(to: existing).compactMap { $0.json?["aps"]?["content-state"] } == [["minute": 23], ["minute": 24]])
        #expect(fx.sim.sim.pushes(to: starter).isEmpty)
        #expect(fx.sim.sim.pushes(to: leaving).isEmpty)
    }

    /// `"catch_up": false` (a migration of tokens that already show the state): the new
    /// tokens get nothing until the next event.
    @Test func aBatchWithCatchUpFalseSendsNothingUntilTheNextEvent() throws {
        let fx = try Live.api()
        let channel = unique("batchquiet")
        try fx.createChannel(channel)
        let p = try fx.publish(channel, update(["minute": 1]))
        #expect(try fx.waitFinished(channel, try #require(p.json?["event_id"]?.stringValue))["state"] == "done")
        let migrated = (0..<5).map { _ in freshToken() }
        let r = try fx.admin(
            "POST", "/v1/channels/\(channel)/subscriptions:batch",
            json: ["subscribe": .array(migrated.map { .string($0) }), "catch_up": false])
        #expect(r.status == 200)
        let next = try fx.publish(channel, update(["minute": 2]))
        #expect(try fx.waitFinished(channel, try #require(next.json?["event_id"]?.stringValue))["state"] == "done")
        for t in migrated {
            #expect(fx.sim.sim.pushes(to: t).compactMap { $0.json?["aps"]?["content-state"] } == [["minute": 2]])
        }
    }

    @Test func deleteIs204ThenNotFound() throws {
        let fx = try Live.api()
        let channel = unique("del")
        try fx.createChannel(channel)
        let token = freshToken()
        #expect(try fx.subscribe(channel, token).status == 201)
        let path = "/v1/channels/\(channel)/subscriptions/\(token)"
        let r = try fx.client.send("DELETE", path, token: fx.adminToken)
        #expect(r.status == 204)
        #expect(r.body.isEmpty)
        let again = try fx.client.send("DELETE", path, token: fx.adminToken)
        #expect(again.status == 404)
        #expect(again.errorCode == "not_found")
        #expect(try count(fx, channel)?["total"] == 0)
    }

    @Test func anUnknownChannelIs404ForEverySubscriptionRoute() throws {
        let fx = try Live.api()
        let channel = unique("ghost")
        #expect(try fx.subscribe(channel, freshToken()).errorCode == "not_found")
        #expect(try fx.client.send("DELETE", "/v1/channels/\(channel)/subscriptions/\(freshToken())", token: fx.adminToken).status == 404)
        let b = try fx.admin("POST", "/v1/channels/\(channel)/subscriptions:batch", json: ["subscribe": [.string(freshToken())]])
        #expect(b.status == 404)
        #expect(b.errorCode == "not_found")
    }

    @Test(arguments: [
        "abc", String(repeating: "0", count: 31), String(repeating: "0", count: 33), String(repeating: "zz", count: 16),
        String(repeating: "ab", count: 513),
    ])
    func aMalformedTokenIs422(token: String) throws {
        let fx = try Live.api()
        let channel = unique("badtok")
        try fx.createChannel(channel)
        let put = try fx.subscribe(channel, token)
        #expect(put.status == 422)
        #expect(put.errorCode == "invalid_token")
        let del = try fx.client.send("DELETE", "/v1/channels/\(channel)/subscriptions/\(token)", token: fx.adminToken)
        #expect(del.errorCode == "invalid_token")
    }

    @Test(arguments: [
        (#"{"kind":"live"}"#, 422, "invalid_field"),
        (#"{"kind":1}"#, 422, "invalid_field"),
        (#"{"replaces":"xyz"}"#, 422, "invalid_token"),
        (#"{"expires_at":"tomorrow"}"#, 422, "invalid_field"),
        (#"{"expires_at":0}"#, 422, "invalid_field"),
        (#"{"expires_at":1.5}"#, 422, "invalid_field"),
        (#"{"kind":"activity","device":"iPhone"}"#, 422, "unknown_field"),
        (#"{"kind":"#, 400, "invalid_json"),
        (#"[]"#, 400, "invalid_body"),
    ])
    func putRefusesBadBodies(body: String, status: Int, code: String) throws {
        let fx = try Live.api()
        let channel = unique("putbody")
        try fx.createChannel(channel)
        let r = try fx.client.send(
            "PUT", "/v1/channels/\(channel)/subscriptions/\(freshToken())", token: fx.adminToken, body: Array(body.utf8),
            contentType: "application/json")
        #expect(r.status == status, "\(body): \(r.text)")
        #expect(r.errorCode == code, "\(body)")
        #expect(try count(fx, channel)?["total"] == 0)
    }

    @Test func aPutBodyMustBeJSONButMayBeAbsent() throws {
        let fx = try Live.api()
        let channel = unique("putct")
        try fx.createChannel(channel)
        let r = try fx.client.send(
            "PUT", "/v1/channels/\(channel)/subscriptions/\(freshToken())", token: fx.adminToken, body: Array("kind=activity".utf8),
            contentType: "application/x-www-form-urlencoded")
        #expect(r.status == 415)
        #expect(r.errorCode == "unsupported_media_type")
        let none = try fx.client.send("PUT", "/v1/channels/\(channel)/subscriptions/\(freshToken())", token: fx.adminToken)
        #expect(none.status == 201)
    }

    @Test func batchCountsNewUpdatedAndRemoved() throws {
        let fx = try Live.api()
        let channel = unique("batch")
        try fx.createChannel(channel)
        let existing = freshToken()
        let leaving = freshToken()
        #expect(try fx.subscribe(channel, existing).status == 201)
        #expect(try fx.subscribe(channel, leaving).status == 201)
        let new = (0..<5).map { _ in freshToken() }
        let body: JSON = [
            "subscribe": .array(
                new.map { .object(["token": .string($0)]) } + [.object(["token": .string(existing), "kind": "activity"])]
                    + [.object(["token": .string(freshToken()), "kind": "push-to-start", "expires_at": .int(nowSeconds() + 3600)])]
                    + [.string(freshToken())]),
            "unsubscribe": [.string(leaving), .string(freshToken())],
        ]
        let r = try fx.admin("POST", "/v1/channels/\(channel)/subscriptions:batch", json: body)
        #expect(r.status == 200)
        #expect(r.json == ["subscribed": 7, "updated": 1, "unsubscribed": 1])
        #expect(try count(fx, channel) == ["activity": 7, "push_to_start": 1, "total": 8])
    }

    @Test func aBadTokenInABatchIs422NamingItsIndexAndNothingIsApplied() throws {
        let fx = try Live.api()
        let channel = unique("batchbad")
        try fx.createChannel(channel)
        let keep = freshToken()
        #expect(try fx.subscribe(channel, keep).status == 201)
        let body: JSON = [
            "subscribe": [.string(freshToken()), .string(freshToken()), .string("not-hex"), .string(freshToken())],
            "unsubscribe": [.string(keep)],
        ]
        let r = try fx.admin("POST", "/v1/channels/\(channel)/subscriptions:batch", json: body)
        #expect(r.status == 422)
        #expect(r.errorCode == "invalid_token")
        #expect(r.errorMessage?.contains("subscribe[2]") == true, "the message names the entry: \(r.errorMessage ?? "")")
        #expect(try count(fx, channel)?["total"] == 1, "nothing was applied, the removal included")

        let badRemoval = try fx.admin(
            "POST", "/v1/channels/\(channel)/subscriptions:batch",
            json: ["subscribe": [.string(freshToken())], "unsubscribe": [.string(keep), "zz"]])
        #expect(badRemoval.errorCode == "invalid_token")
        #expect(badRemoval.errorMessage?.contains("unsubscribe[1]") == true)
        #expect(try count(fx, channel)?["total"] == 1)
    }

    @Test(arguments: [
        (#"{"subscribe":[{"token":"\#(String(repeating: "a", count: 64))","kind":"live"}]}"#, 422, "invalid_field"),
        (#"{"subscribe":"\#(String(repeating: "a", count: 64))"}"#, 422, "invalid_field"),
        (#"{"subscribe":[{"kind":"activity"}]}"#, 422, "missing_field"),
        (#"{"subscribe":[{"token":5}]}"#, 422, "invalid_field"),
        (#"{"unsubscribe":[5]}"#, 422, "invalid_field"),
        (#"{"subscribe":[true]}"#, 422, "invalid_field"),
        (#"{"subscribe":[{"token":"\#(String(repeating: "a", count: 64))","expires_at":1.5}]}"#, 422, "invalid_field"),
        (#"{"subscribe":[{"token":"\#(String(repeating: "a", count: 64))","expires_at":0}]}"#, 422, "invalid_field"),
        (#"{"subscribe":[{"token":"\#(String(repeating: "a", count: 64))","expires":5}]}"#, 422, "unknown_field"),
        (#"{"subscribe":[],"unsubscibe":["\#(String(repeating: "a", count: 64))"]}"#, 422, "unknown_field"),
        (#"{"subscribe":["\#(String(repeating: "a", count: 64))"],"catch_up":"no"}"#, 422, "invalid_field"),
        (#"{"subscribe":["#, 400, "invalid_json"),
        (#"[]"#, 400, "invalid_body"),
        ("", 400, "invalid_body"),
    ])
    func batchRefusesBadBodies(body: String, status: Int, code: String) throws {
        let fx = try Live.api()
        let channel = unique("batchbody")
        try fx.createChannel(channel)
        let r = try fx.client.send(
            "POST", "/v1/channels/\(channel)/subscriptions:batch", token: fx.adminToken, body: Array(body.utf8),
            contentType: "application/json")
        #expect(r.status == status, "\(body): \(r.text)")
        #expect(r.errorCode == code, "\(body)")
        #expect(try count(fx, channel)?["total"] == 0)
    }

    @Test func aBatchOverTheEntryLimitIs413() throws {
        let fx = try Live.api()
        let channel = unique("batchbig")
        try fx.createChannel(channel)
        let t = String(repeating: "ab", count: 32)
        let body = #"{"unsubscribe":["# + Array(repeating: "\"\(t)\"", count: 100_001).joined(separator: ",") + "]}"
        let r = try fx.client.send(
            "POST", "/v1/channels/\(channel)/subscriptions:batch", token: fx.adminToken, body: Array(body.utf8),
            contentType: "application/json")
        #expect(r.status == 413)
        #expect(r.errorCode == "request_too_large")
    }

    @Test func aBatchOnAClosedChannelIs409() throws {
        let fx = try Live.api()
        let channel = unique("batchclosed")
        try fx.createChannel(channel)
        #expect(try fx.admin("DELETE", "/v1/channels/\(channel)").status == 200)
        let r = try fx.admin("POST", "/v1/channels/\(channel)/subscriptions:batch", json: ["subscribe": [.string(freshToken())]])
        #expect(r.status == 409)
        #expect(r.errorCode == "channel_closed")
    }
}
