import Foundation
import HeraldCore
import HeraldTestSupport
import Testing

/// Serialized: one test counts the simulator's channels, which the others change.
@Suite(.liveAPI, .serialized) struct ChannelRoutesTests {
    @Test func aFanoutChannelIsCreatedWithDefaultsAndNoAPNsChannel() throws {
        let fx = try Live.api()
        let id = unique("match")
        let before = nowSeconds()
        let r = try fx.admin("POST", "/v1/channels", json: ["id": .string(id), "bundle_id": "com.example.app"])
        #expect(r.status == 201)
        #expect(r.header("location") == "/v1/channels/\(id)")
        let c = try #require(r.json)
        #expect(c["id"] == .string(id))
        #expect(c["bundle_id"] == "com.example.app")
        #expect(c["mode"] == "fanout")
        #expect(c["environment"] == "production")
        #expect(c["storage_policy"] == "none")
        #expect(c["apns_channel_id"] == .null)
        #expect(c["state"] == "open")
        #expect(c["closed_at"] == .null)
        #expect(c["last_event"] == .null)
        #expect(c["subscribers"] == ["activity": 0, "push_to_start": 0, "total": 0])
        #expect(c["settings"] == ["catch_up": true, "min_interval_ms": 0, "priority10_budget_per_hour": 0])
        let created = try #require(c["created_at"]?.intValue)
        #expect(created >= before && created <= nowSeconds())
    }

    @Test func deliverySettingsAreTakenAtCreationAndCheckedAtTheDoor() throws {
        let fx = try Live.api()
        let id = unique("tuned")
        let r = try fx.admin(
            "POST", "/v1/channels",
            json: [
                "id": .string(id), "bundle_id": "com.example.app", "catch_up": false, "min_interval_ms": 2000,
                "priority10_budget_per_hour": 12,
            ])
        #expect(r.status == 201)
        #expect(r.json?["settings"] == ["catch_up": false, "min_interval_ms": 2000, "priority10_budget_per_hour": 12])
        #expect(try fx.admin("GET", "/v1/channels/\(id)").json?["settings"]?["min_interval_ms"] == 2000)
        for (field, bad) in [("catch_up", JSON.string("yes")), ("min_interval_ms", -1), ("priority10_budget_per_hour", 1.5)] {
            let e = try fx.admin(
                "POST", "/v1/channels", json: ["id": .string(unique("bad")), "bundle_id": "com.example.app", .init(field): bad])
            #expect(e.status == 422, "\(field)")
            #expect(e.errorCode == "invalid_field")
        }
    }

    @Test(arguments: [("broadcast", "most-recent", 1), ("hybrid", "none", 0), ("broadcast", "none", 0)])
    func broadcastModesCreateTheAPNsChannelOnTheSimulator(mode: String, storage: String, policy: Int) throws {
        let fx = try Live.api()
        let id = unique(mode)
        let c = try fx.createChannel(id, mode: mode, storage: storage)
        let apnsID = try #require(c["apns_channel_id"]?.stringValue)
        #expect(!apnsID.isEmpty)
        #expect(c["mode"] == .string(mode))
        #expect(c["storage_policy"] == .string(storage))
        #expect(fx.simulatorChannels[apnsID] == policy)
        let shown = try fx.admin("GET", "/v1/channels/\(id)")
        #expect(shown.json?["apns_channel_id"] == .string(apnsID))
    }

    @Test func aSecondChannelWithTheSameIdIs409AndCreatesNoSecondAPNsChannel() throws {
        let fx = try Live.api()
        let id = unique("dup")
        try fx.createChannel(id, mode: "broadcast")
        let count = fx.simulatorChannels.count
        let r = try fx.admin("POST", "/v1/channels", json: ["id": .string(id), "bundle_id": "com.example.app", "mode": "broadcast"])
        #expect(r.status == 409)
        #expect(r.errorCode == "channel_exists")
        #expect(fx.simulatorChannels.count == count)
    }

    @Test func listIsSortedByIdAndCarriesCountsAndTheLastEvent() throws {
        let fx = try Live.api()
        let b = unique("list-b")
        let a = unique("list-a")
        try fx.createChannel(b)
        try fx.createChannel(a)
        let r = try fx.admin("GET", "/v1/channels")
        #expect(r.status == 200)
        let all = try #require(r.json?["channels"]?.arrayValue)
        let ids = all.compactMap { $0["id"]?.stringValue }
        #expect(ids == ids.sorted())
        #expect(ids.contains(a) && ids.contains(b))
        for c in all {
            #expect(c["subscribers"]?["total"]?.intValue != nil)
            #expect(c["last_event"] != nil)
        }
    }

    @Test func showCountsSubscribersByKindAndShowsTheNewestEvent() throws {
        let fx = try Live.api()
        let id = unique("show")
        try fx.createChannel(id)
        for _ in 0..<3 { #expect(try fx.subscribe(id, freshToken()).status == 201) }
        #expect(try fx.subscribe(id, freshToken(), body: ["kind": "push-to-start"]).status == 201)
        let e1 = try #require(try fx.publish(id, update(["score": 1])).json?["event_id"]?.stringValue)
        let e2 = try #require(try fx.publish(id, update(["score": 2])).json?["event_id"]?.stringValue)
        let c = try #require(try fx.admin("GET", "/v1/channels/\(id)").json)
        #expect(c["subscribers"] == ["activity": 3, "push_to_start": 1, "total": 4])
        #expect(c["last_event"]?["event_id"] == .string(e2))
        #expect(c["last_event"]?["seq"] == 2)
        #expect(c["last_event"]?["event"] == "update")
        #expect(e1 != e2)
    }

    @Test func showOfAnUnknownChannelIs404() throws {
        let fx = try Live.api()
        let r = try fx.admin("GET", "/v1/channels/\(unique("nope"))")
        #expect(r.status == 404)
        #expect(r.errorCode == "not_found")
        #expect(try fx.admin("DELETE", "/v1/channels/\(unique("nope"))").status == 404)
    }

    @Test func closeDropsSubscriptionsRefusesPublishesAndDeletesTheAPNsChannel() throws {
        let fx = try Live.api()
        let id = unique("close")
        let apnsID = try #require(try fx.createChannel(id, mode: "hybrid")["apns_channel_id"]?.stringValue)
        let token = freshToken()
        #expect(try fx.subscribe(id, token).status == 201)
        #expect(fx.simulatorChannels[apnsID] != nil)

        let r = try fx.admin("DELETE", "/v1/channels/\(id)")
        #expect(r.status == 200)
        #expect(r.json?["state"] == "closed")
        #expect(r.json?["closed_at"]?.intValue != nil)
        #expect(r.json?["subscribers"]?["total"] == 0)
        #expect(fx.simulatorChannels[apnsID] == nil, "the APNs channel is deleted")

        let shown = try #require(try fx.admin("GET", "/v1/channels/\(id)").json)
        #expect(shown["state"] == "closed")
        #expect(shown["subscribers"]?["total"] == 0)

        let p = try fx.publish(id, update())
        #expect(p.status == 409)
        #expect(p.errorCode == "channel_closed")
        let s = try fx.subscribe(id, freshToken())
        #expect(s.status == 409)
        #expect(s.errorCode == "channel_closed")
        #expect(try fx.client.send("DELETE", "/v1/channels/\(id)/subscriptions/\(token)", token: fx.adminToken).status == 404)
        // Closing again answers the closed channel; the id is not reusable.
        #expect(try fx.admin("DELETE", "/v1/channels/\(id)").json?["state"] == "closed")
        #expect(
            try fx.admin("POST", "/v1/channels", json: ["id": .string(id), "bundle_id": "com.example.app"]).errorCode == "channel_exists")
    }

    @Test func closingStopsAnEventStillQueued() throws {
        let fx = try Live.api()
        let id = unique("close-stop")
        try fx.createChannel(id)
        let r = try fx.publish(id, update())
        let eventID = try #require(r.json?["event_id"]?.stringValue)
        #expect(try fx.admin("DELETE", "/v1/channels/\(id)").status == 200)
        let e = try fx.waitFinished(id, eventID)
        // Either it finished before the close (no subscribers: instantly done) or the close failed it.
        #expect(e["state"] == "done" || (e["state"] == "failed" && e["failure_reason"] == "channel_closed"))
    }

    @Test(arguments: [
        (#"{"bundle_id":"com.example.app"}"#, 422, "missing_field"),
        (#"{"id":"x"}"#, 422, "missing_field"),
        (#"{"id":"has space","bundle_id":"com.example.app"}"#, 422, "invalid_field"),
        (#"{"id":"","bundle_id":"com.example.app"}"#, 422, "invalid_field"),
        (#"{"id":7,"bundle_id":"com.example.app"}"#, 422, "invalid_field"),
        (#"{"id":"x","bundle_id":"com.example.app.push-type.liveactivity"}"#, 422, "invalid_field"),
        (#"{"id":"x","bundle_id":"com.example.app","mode":"multicast"}"#, 422, "invalid_field"),
        (#"{"id":"x","bundle_id":"com.example.app","environment":"staging"}"#, 422, "invalid_field"),
        (#"{"id":"x","bundle_id":"com.example.app","storage_policy":"all"}"#, 422, "invalid_field"),
        (#"{"id":"x","bundle_id":"com.example.app","mode":["fanout"]}"#, 422, "invalid_field"),
        (#"{"id":"x","bundle_id":"com.example.app","colour":"red"}"#, 422, "unknown_field"),
        (#"{"id":"x","#, 400, "invalid_json"),
        (#"["x"]"#, 400, "invalid_body"),
        ("", 400, "invalid_body"),
    ])
    func createRefusesBadBodies(body: String, status: Int, code: String) throws {
        let fx = try Live.api()
        let r = try fx.client.send(
            "POST", "/v1/channels", token: fx.adminToken, body: Array(body.utf8), contentType: "application/json")
        #expect(r.status == status, "\(body): \(r.text)")
        #expect(r.errorCode == code, "\(body)")
    }

    @Test func createWantsJSON() throws {
        let fx = try Live.api()
        let body = Array(#"{"id":"ct","bundle_id":"com.example.app"}"#.utf8)
        for ct in ["text/plain", "application/x-www-form-urlencoded", nil] as [String?] {
            let r = try fx.client.send("POST", "/v1/channels", token: fx.adminToken, body: body, contentType: ct)
            #expect(r.status == 415, "\(ct ?? "no content type")")
            #expect(r.errorCode == "unsupported_media_type")
        }
        // Parameters and +json media types are JSON.
        let ok = try fx.client.send(
            "POST", "/v1/channels", token: fx.adminToken,
            body: Array(#"{"id":"\#(unique("ct"))","bundle_id":"com.example.app"}"#.utf8),
            contentType: "application/json; charset=utf-8")
        #expect(ok.status == 201)
    }
}
