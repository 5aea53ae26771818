import Foundation
import HeraldCore
import HeraldTestSupport
import Testing

@Suite(.liveAPI) struct EventRoutesTests {
    @Test func aPublishIsAcceptedThenDeliveredToEverySubscriber() throws {
        let fx = try Live.api()
        let channel = unique("deliver")
        try fx.createChannel(channel)
        let tokens = (0..<20).map { _ in freshToken() }
        let b = try fx.admin("POST", "/v1/channels/\(channel)/subscriptions:batch", json: ["subscribe": .array(tokens.map(JSON.string))])
        #expect(b.json?["subscribed"] == 20)

        let r = try fx.publish(channel, update(["home": 2, "away": 1]))
        #expect(r.status == 202)
        let a = try #require(r.json)
        let eventID = try #require(a["event_id"]?.stringValue)
        #expect(eventID.hasPrefix("evt_"))
        #expect(a["seq"] == 1)
        #expect(a["channel"] == .string(channel))
        #expect(["queued", "sending", "done"].contains(a["state"]?.stringValue ?? ""))
        let ts = try #require(a["aps_timestamp"]?.intValue)
        #expect(abs(ts - nowSeconds()) < 5, "Herald stamps aps.timestamp when the publisher leaves it out")
        #expect(r.header("location") == "/v1/channels/\(channel)/events/\(eventID)")

        let e = try fx.waitFinished(channel, eventID)
        #expect(e["state"] == "done")
        #expect(e["targets"] == 20)
        #expect(e["sent"] == 20)
        #expect(e["failed"] == 0)
        #expect(e["event"] == "update")
        #expect(e["priority"] == 5, "an update without alert goes at priority 5")
        #expect(e["broadcast"] == "none")
        #expect(e["started_at"]?.intValue != nil && e["finished_at"]?.intValue != nil)
        for t in tokens {
            let got = fx.sim.sim.pushes(to: t)
            #expect(got.count == 1)
            #expect(got.first?.json == ["aps": ["event": "update", "content-state": ["home": 2, "away": 1], "timestamp": .int(ts)]])
            #expect(got.first?.priority == 5)
        }
    }

    @Test func aBroadcastChannelPublishGoesToTheAPNsChannel() throws {
        let fx = try Live.api()
        let channel = unique("bcast")
        let apnsID = try #require(try fx.createChannel(channel, mode: "broadcast", storage: "most-recent")["apns_channel_id"]?.stringValue)
        let r = try fx.publish(channel, update(["gate": "B12"]), headers: [])
        #expect(r.status == 202)
        let e = try fx.waitFinished(channel, try #require(r.json?["event_id"]?.stringValue))
        #expect(e["state"] == "done")
        #expect(e["broadcast"] == "sent")
        let got = fx.sim.sim.broadcasts(on: apnsID)
        #expect(got.count == 1)
        #expect(got.first?.json?["aps"]?["content-state"] == ["gate": "B12"])
    }

    @Test func progressOfAnUnknownEventIs404() throws {
        let fx = try Live.api()
        let channel = unique("prog")
        try fx.createChannel(channel)
        let r = try fx.admin("GET", "/v1/channels/\(channel)/events/evt_nothing")
        #expect(r.status == 404)
        #expect(r.errorCode == "not_found")
        // An event of another channel is not found through this one.
        let other = unique("prog-other")
        try fx.createChannel(other)
        let id = try #require(try fx.publish(other, update()).json?["event_id"]?.stringValue)
        #expect(try fx.admin("GET", "/v1/channels/\(channel)/events/\(id)").status == 404)
        #expect(try fx.admin("GET", "/v1/channels/\(other)/events/\(id)").status == 200)
    }

    @Test func aRepeatedIdempotencyKeyReturnsTheFirstEventWith200() throws {
        let fx = try Live.api()
        let channel = unique("idem")
        try fx.createChannel(channel)
        let first = try fx.publish(channel, update(["score": 1]), headers: [("Idempotency-Key", "goal-1")])
        #expect(first.status == 202)
        let again = try fx.publish(channel, update(["score": 2]), headers: [("Idempotency-Key", "goal-1")])
        #expect(again.status == 200)
        #expect(again.json?["event_id"] == first.json?["event_id"])
        #expect(again.json?["seq"] == 1)
        #expect(again.json?["aps_timestamp"] == first.json?["aps_timestamp"])
        let c = try fx.admin("GET", "/v1/channels/\(channel)")
        #expect(c.json?["last_event"]?["seq"] == 1, "no second event")
        // Another key is another event; keys are per channel.
        #expect(try fx.publish(channel, update(["score": 3]), headers: [("Idempotency-Key", "goal-2")]).status == 202)
        let other = unique("idem-other")
        try fx.createChannel(other)
        #expect(try fx.publish(other, update(), headers: [("Idempotency-Key", "goal-1")]).status == 202)
    }

    @Test(arguments: ["", String(repeating: "k", count: 256)])
    func anIdempotencyKeyOutOfBoundsIs400(key: String) throws {
        let fx = try Live.api()
        let channel = unique("idem-bad")
        try fx.createChannel(channel)
        let r = try fx.publish(channel, update(), headers: [("Idempotency-Key", key)])
        #expect(r.status == 400)
        #expect(r.errorCode == "invalid_field")
    }

    @Test func aDryRunRendersTheExactPayloadAndSendsNothing() throws {
        let fx = try Live.api()
        let channel = unique("dry")
        try fx.createChannel(channel)
        let tokens = (0..<3).map { _ in freshToken() }
        for t in tokens { try fx.subscribe(channel, t) }
        let ts = nowSeconds()
        let r = try fx.publish(channel, update(["score": 4], timestamp: ts), query: "?dry_run=true")
        #expect(r.status == 200)
        let d = try #require(r.json)
        #expect(d["dry_run"] == true)
        #expect(d["event"] == "update")
        #expect(d["payload"] == ["aps": ["event": "update", "content-state": ["score": 4], "timestamp": .int(ts)]])
        #expect(d["payload_bytes"]?.intValue == Int64(d["payload"]!.encoded().count))
        #expect(d["limit_bytes"] == 4096)
        #expect(d["targets"] == 3)
        #expect(d["broadcast"] == false)
        #expect(d["priority"] == 5)
        #expect(d["aps_timestamp"] == .int(ts))
        #expect(d["event_id"] == nil)
        // Nothing was stored or sent: no event exists, the same timestamp is still free, and
        // the subscribers get only the real publish.
        #expect(try fx.admin("GET", "/v1/channels/\(channel)").json?["last_event"] == .null)
        let real = try fx.publish(channel, update(["score": 5], timestamp: ts))
        #expect(real.status == 202)
        #expect(try fx.waitFinished(channel, try #require(real.json?["event_id"]?.stringValue))["sent"] == 3)
        for t in tokens { #expect(fx.sim.sim.pushes(to: t).map { $0.json?["aps"]?["content-state"] } == [["score": 5]]) }
    }

    @Test func anAmbiguousDryRunNeverPublishes() throws {
        let fx = try Live.api()
        let channel = unique("dry-flag")
        try fx.createChannel(channel)
        for q in ["?dry_run", "?dry_run=", "?dry_run=TRUE", "?dry_run=1", "?dry_run=yes"] {
            let r = try fx.publish(channel, update(), query: q)
            #expect(r.status == 200, "\(q)")
            #expect(r.json?["dry_run"] == true, "\(q)")
        }
        for q in ["?dry_run=on", "?dry_run=maybe", "?dry_run=2"] {
            let r = try fx.publish(channel, update(), query: q)
            #expect(r.status == 400, "\(q)")
            #expect(r.errorCode == "invalid_field", "\(q)")
        }
        #expect(try fx.admin("GET", "/v1/channels/\(channel)").json?["last_event"] == .null, "nothing was published")
        for q in ["?dry_run=false", "?dry_run=0", "?dry_run=no", "?other=1"] {
            #expect(try fx.publish(channel, update(), query: q).status == 202, "\(q)")
        }
    }

    @Test func aDryRunOnABroadcastChannelReportsTheBroadcastLimit() throws {
        let fx = try Live.api()
        let channel = unique("dry-b")
        try fx.createChannel(channel, mode: "broadcast")
        let apnsID = try #require(try fx.admin("GET", "/v1/channels/\(channel)").json?["apns_channel_id"]?.stringValue)
        let r = try fx.publish(channel, update(["dry": true]), query: "?dry_run=true")
        #expect(r.json?["limit_bytes"] == 5120)
        #expect(r.json?["broadcast"] == true)
        #expect(r.json?["targets"] == 0)
        // Only the real publish that follows reaches APNs.
        let real = try fx.publish(channel, update(["dry": false]))
        #expect(try fx.waitFinished(channel, try #require(real.json?["event_id"]?.stringValue))["broadcast"] == "sent")
        #expect(fx.sim.sim.broadcasts(on: apnsID).map { $0.json?["aps"]?["content-state"] } == [["dry": false]])
    }

    @Test func aDryRunStillRefusesWhatAPublishWould() throws {
        let fx = try Live.api()
        let channel = unique("dry-refuse")
        try fx.createChannel(channel)
        let big = update(["blob": .string(String(repeating: "x", count: 5000))])
        let r = try fx.publish(channel, big, query: "?dry_run=true")
        #expect(r.status == 413)
        #expect(r.errorCode == "payload_too_large")
    }

    @Test func anOlderTimestampIs409AndTheSameIs409() throws {
        let fx = try Live.api()
        let channel = unique("order")
        try fx.createChannel(channel)
        let ts = nowSeconds()
        #expect(try fx.publish(channel, update(timestamp: ts)).status == 202)
        for stale in [ts, ts - 1, 0] {
            let r = try fx.publish(channel, update(timestamp: stale))
            #expect(r.status == 409, "\(stale)")
            #expect(r.errorCode == "stale_timestamp")
        }
        // Without a timestamp Herald picks one after the last.
        let next = try fx.publish(channel, update())
        #expect(next.status == 202)
        #expect((next.json?["aps_timestamp"]?.intValue ?? 0) > ts)
    }

    @Test func anUpdateAfterEndIs409UntilANewStart() throws {
        let fx = try Live.api()
        let channel = unique("ended")
        try fx.createChannel(channel)
        #expect(try fx.publish(channel, start()).status == 202)
        #expect(try fx.publish(channel, update()).status == 202)
        #expect(try fx.publish(channel, end()).status == 202)
        let r = try fx.publish(channel, update())
        #expect(r.status == 409)
        #expect(r.errorCode == "activity_ended")
        #expect(try fx.publish(channel, start()).status == 202)
        #expect(try fx.publish(channel, update()).status == 202)
    }

    @Test func aTimestampFarInTheFutureIs422() throws {
        let fx = try Live.api()
        let channel = unique("future")
        try fx.createChannel(channel)
        let r = try fx.publish(channel, update(timestamp: nowSeconds() + 3600))
        #expect(r.status == 422)
        #expect(r.errorCode == "invalid_field")
        #expect(try fx.publish(channel, update(timestamp: nowSeconds() + 60)).status == 202, "a little ahead is fine")
    }

    /// The message states the size and the limit (the one message a test reads).
    func checkTooLarge(_ r: APIResponse, size: Int, limit: Int) throws {
        #expect(r.status == 413)
        #expect(r.errorCode == "payload_too_large")
        let message = try #require(r.errorMessage)
        let numbers = message.split(whereSeparator: { !$0.isNumber }).compactMap { Int($0) }
        #expect(numbers.contains(limit), "\(message)")
        #expect(numbers.contains(size), "the size is stated: \(message)")
    }

    /// An update whose rendered payload is exactly `bytes` long (with timestamp `ts`).
    func padded(bytes: Int, ts: Int64) -> JSON {
        let base = update(["x": ""], timestamp: ts)
        let pad = bytes - base.encoded().count
        return update(["x": .string(String(repeating: "p", count: max(0, pad)))], timestamp: ts)
    }

    @Test func aTokenPayloadOver4096Is413AndExactly4096Passes() throws {
        let fx = try Live.api()
        let channel = unique("size")
        try fx.createChannel(channel)
        let ts = nowSeconds()
        let over = padded(bytes: 4097, ts: ts)
        #expect(over.encoded().count == 4097)
        try checkTooLarge(try fx.publish(channel, over), size: 4097, limit: 4096)
        let exact = try fx.publish(channel, padded(bytes: 4096, ts: ts), query: "?dry_run=true")
        #expect(exact.status == 200)
        #expect(exact.json?["payload_bytes"] == 4096)
        #expect(try fx.publish(channel, padded(bytes: 4096, ts: ts)).status == 202)
    }

    @Test func aBroadcastPayloadMayReach5120() throws {
        let fx = try Live.api()
        let channel = unique("size-b")
        try fx.createChannel(channel, mode: "broadcast")
        let ts = nowSeconds()
        try checkTooLarge(try fx.publish(channel, padded(bytes: 5121, ts: ts)), size: 5121, limit: 5120)
        #expect(try fx.publish(channel, padded(bytes: 5120, ts: ts)).status == 202)
        // Hybrid sends token pushes too: 4096.
        let hybrid = unique("size-h")
        try fx.createChannel(hybrid, mode: "hybrid")
        try checkTooLarge(try fx.publish(hybrid, padded(bytes: 4097, ts: ts)), size: 4097, limit: 4096)
    }

    @Test func aBodyOver64KiBIs413BeforeParsing() throws {
        let fx = try Live.api()
        let channel = unique("huge")
        try fx.createChannel(channel)
        let body =
            Array(#"{"aps":{"event":"update","content-state":{"x":""#.utf8) + Array(repeating: UInt8(ascii: "a"), count: 70_000)
            + Array(#""}}}"#.utf8)
        let r = try fx.client.send(
            "POST", "/v1/channels/\(channel)/events", token: fx.adminToken, body: body, contentType: "application/json")
        #expect(r.status == 413)
        #expect(r.errorCode == "request_too_large")
    }

    @Test(arguments: [
        (#"{"aps":{"event":"update","content-state":{}"#, 400, "invalid_json"),
        (#"not json"#, 400, "invalid_json"),
        (#"[1]"#, 400, "invalid_body"),
        (#"{}"#, 422, "missing_field"),
        (#"{"aps":{"content-state":{}}}"#, 422, "missing_field"),
        (#"{"aps":{"event":"update"}}"#, 422, "missing_field"),
        (#"{"aps":{"event":"start","content-state":{}}}"#, 422, "missing_field"),
        (#"{"aps":"update"}"#, 422, "invalid_field"),
        (#"{"aps":{"event":"pause","content-state":{}}}"#, 422, "invalid_field"),
        (#"{"aps":{"event":"update","content-state":[]}}"#, 422, "invalid_field"),
        (#"{"aps":{"event":"update","content-state":{},"timestamp":"now"}}"#, 422, "invalid_field"),
        (#"{"aps":{"event":"update","content-state":{},"timestamp":-1}}"#, 422, "invalid_field"),
        (#"{"aps":{"event":"update","content-state":{},"relevance-score":"high"}}"#, 422, "invalid_field"),
        (#"{"aps":{"event":"update","content-state":{},"dismissal-date":5}}"#, 422, "invalid_field"),
        (#"{"aps":{"event":"update","content-state":{},"alert":"Goal"}}"#, 422, "invalid_field"),
        (#"{"aps":{"event":"update","content-state":{}},"priority":7}"#, 422, "invalid_field"),
        (#"{"aps":{"event":"update","content-state":{}},"priority":"high"}"#, 422, "invalid_field"),
        (#"{"aps":{"event":"update","content-state":{}},"expiration":-5}"#, 422, "invalid_field"),
        (#"{"aps":{"event":"update","content-state":{}},"topic":"x"}"#, 422, "unknown_field"),
    ])
    func publishRefusesBadBodies(body: String, status: Int, code: String) throws {
        let fx = try Live.api()
        let channel = unique("badpub")
        try fx.createChannel(channel)
        let r = try fx.client.send(
            "POST", "/v1/channels/\(channel)/events", token: fx.adminToken, body: Array(body.utf8), contentType: "application/json")
        #expect(r.status == status, "\(body): \(r.text)")
        #expect(r.errorCode == code, "\(body)")
        #expect(try fx.admin("GET", "/v1/channels/\(channel)").json?["last_event"] == .null)
    }

    @Test func publishWantsJSON() throws {
        let fx = try Live.api()
        let channel = unique("pubct")
        try fx.createChannel(channel)
        let body = update().encoded()
        for ct in ["text/plain", "application/xml", nil] as [String?] {
            let r = try fx.client.send("POST", "/v1/channels/\(channel)/events", token: fx.adminToken, body: body, contentType: ct)
            #expect(r.status == 415, "\(ct ?? "none")")
            #expect(r.errorCode == "unsupported_media_type")
        }
        let empty = try fx.client.send(
            "POST", "/v1/channels/\(channel)/events", token: fx.adminToken, body: [], contentType: "application/json")
        #expect(empty.status == 400)
        #expect(empty.errorCode == "invalid_body")
    }

    @Test func priorityAndExpirationAreHonoured() throws {
        let fx = try Live.api()
        let channel = unique("prio")
        try fx.createChannel(channel)
        let token = freshToken()
        try fx.subscribe(channel, token)
        var body = update(["s": 1]).objectValue!
        body["priority"] = 10
        body["expiration"] = .int(nowSeconds() + 600)
        let r = try fx.publish(channel, .object(body))
        let e = try fx.waitFinished(channel, try #require(r.json?["event_id"]?.stringValue))
        #expect(e["priority"] == 10)
        #expect(e["state"] == "done")
        #expect(fx.sim.sim.pushes(to: token).first?.priority == 10)
    }

    @Test func publishingToAnUnknownChannelIs404() throws {
        let fx = try Live.api()
        let r = try fx.publish(unique("ghost"), update())
        #expect(r.status == 404)
        #expect(r.errorCode == "not_found")
    }
}
