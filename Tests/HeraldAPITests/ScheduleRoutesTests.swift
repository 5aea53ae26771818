import Foundation
import HeraldAPI
import HeraldCore
import HeraldSQL
import HeraldStore
import HeraldTestSupport
import Testing

/// A live API with its duty runner (as `herald serve` has): scheduled events go out, expired
/// channels end and close. On SQLite, or PostgreSQL with `HERALD_TEST_STORAGE=postgres`.
final class DutyFixture: Sendable {
    let api: APIFixture
    let runner: DutyRunner

    /// As `herald serve`: the engine leaves the subscription sweep to the runner.
    init(plan: DutyPlan = DutyPlan()) throws {
        api = try APIFixture(
            storage: testStorage, fanout: { $0.sweepsSubscriptions = false },
            makeHandler: { p in
                var c = APIConfig()
                c.adminToken = Redacted(p.adminToken)
                return APIServer(
                    config: c, store: p.storage, engine: p.engine, channelManagers: p.channelManagers, metrics: p.metrics,
                    logger: .discard)
            })
        let server = try #require(api.handler as? APIServer)
        runner = DutyRunner(api: server, plan: plan, metrics: api.fanout.metrics, logger: .discard)
        try runner.start()
    }

    deinit { runner.stop() }
}

@Suite struct ScheduleRoutesTests {
    /// `POST …/events` with `send_at`.
    func schedule(_ fx: APIFixture, _ channel: String, _ body: JSON, at sendAt: Int64, headers: [(String, String)] = [])
        throws -> APIResponse
    {
        var o = try #require(body.objectValue)
        o["send_at"] = .int(sendAt)
        return try fx.publish(channel, .object(o), headers: headers)
    }

    func event(_ fx: APIFixture, _ channel: String, _ id: String) throws -> JSON {
        try #require(try fx.admin("GET", "/v1/channels/\(segment(channel))/events/\(id)").json)
    }

    /// Waits until the event leaves `scheduled` and then finishes (or 30 s).
    func waitReleased(_ fx: APIFixture, _ channel: String, _ id: String) throws -> JSON {
        _ = try Poll.until(timeout: 30) { try event(fx, channel, id)["state"] != "scheduled" }
        return try fx.waitFinished(channel, id)
    }

    @Test func aScheduledStartGoesOutAtSendAtWithItsTimestampTakenThen() throws {
        let d = try DutyFixture()
        let fx = d.api
        let channel = unique("kickoff")
        try fx.createChannel(channel)
        let token = freshToken()
        #expect(try fx.subscribe(channel, token, body: ["kind": "push-to-start"]).status == 201)
        let sendAt = nowSeconds() + 2
        let r = try schedule(fx, channel, start(["home": 0]), at: sendAt)
        #expect(r.status == 202)
        #expect(r.json?["state"] == "scheduled")
        #expect(r.json?["send_at"] == .int(sendAt))
        let id = try #require(r.json?["event_id"]?.stringValue)
        #expect(try event(fx, channel, id)["state"] == "scheduled")
        #expect(fx.sim.sim.pushes(to: token).isEmpty)

        let e = try waitReleased(fx, channel, id)
        #expect(e["state"] == "done")
        #expect(e["send_at"] == .int(sendAt))
        let got = fx.sim.sim.pushes(to: token)
        #expect(got.count == 1)
        let push = try #require(got.first)
        #expect(push.event == "start")
        print("schedule: a start reached the simulator \(Int((push.receivedAt - Double(sendAt)) * 1000)) ms after send_at")
        #expect(push.receivedAt >= Double(sendAt), "not before its time")
        #expect(push.receivedAt - Double(sendAt) < 1.0, "within 1 s of send_at: \(push.receivedAt - Double(sendAt))")
        #expect((push.timestamp ?? 0) >= sendAt, "aps.timestamp taken when it went out")
    }

    @Test func aCancelledEventNeverGoesOutAndCannotBeCancelledTwice() throws {
        let d = try DutyFixture()
        let fx = d.api
        let channel = unique("cancel")
        try fx.createChannel(channel)
        let token = freshToken()
        #expect(try fx.subscribe(channel, token).status == 201)
        let sendAt = nowSeconds() + 2
        let id = try #require(try schedule(fx, channel, update(["s": 1]), at: sendAt).json?["event_id"]?.stringValue)
        let c = try fx.admin("DELETE", "/v1/channels/\(channel)/events/\(id)")
        #expect(c.status == 200)
        #expect(c.json?["state"] == "cancelled")
        #expect(try fx.admin("DELETE", "/v1/channels/\(channel)/events/\(id)").errorCode == "not_scheduled")
        // A marker scheduled for the same second after it: the runner releases in
        // (send_at, seq) order, so once the marker went out the cancelled one was passed by.
        let live = try #require(try schedule(fx, channel, update(["s": 2]), at: sendAt).json?["event_id"]?.stringValue)
        #expect(try waitReleased(fx, channel, live)["state"] == "done")
        #expect(try event(fx, channel, id)["state"] == "cancelled")
        #expect(fx.sim.sim.pushes(to: token).map { $0.json?["aps"]?["content-state"] } == [["s": 2]])
        let sent = try fx.admin("DELETE", "/v1/channels/\(channel)/events/\(live)")
        #expect(sent.status == 409 && sent.errorCode == "not_scheduled")
    }

    @Test func aScheduledUpdateOvertakenByANewerLiveOneIsSuperseded() throws {
        let d = try DutyFixture()
        let fx = d.api
        let channel = unique("overtaken")
        try fx.createChannel(channel)
        let token = freshToken()
        #expect(try fx.subscribe(channel, token).status == 201)
        let now = nowSeconds()
        let id = try #require(
            try schedule(fx, channel, update(["s": "scheduled"], timestamp: now + 1), at: now + 2).json?["event_id"]?.stringValue)
        let live = try #require(try fx.publish(channel, update(["s": "live"], timestamp: now + 5)).json?["event_id"]?.stringValue)
        let e = try waitReleased(fx, channel, id)
        #expect(e["state"] == "superseded")
        #expect(e["superseded_by"] == .string(live))
        #expect(fx.sim.sim.pushes(to: token).map { $0.json?["aps"]?["content-state"] } == [["s": "live"]])
    }

    @Test func aScheduledUpdateAfterAnEndFailsWithTheReason() throws {
        let d = try DutyFixture()
        let fx = d.api
        let channel = unique("after-end")
        try fx.createChannel(channel)
        let id = try #require(try schedule(fx, channel, update(), at: nowSeconds() + 2).json?["event_id"]?.stringValue)
        #expect(try fx.publish(channel, end()).status == 202)
        let e = try waitReleased(fx, channel, id)
        #expect(e["state"] == "failed")
        #expect(e["failure_reason"] == "activity_ended")
    }

    @Test func sendAtIsRefusedOutsideTheWindowAndWorksWithDryRunAndIdempotencyKeys() throws {
        let d = try DutyFixture()
        let fx = d.api
        let channel = unique("window")
        try fx.createChannel(channel)
        let past = try schedule(fx, channel, update(), at: nowSeconds() - 1)
        #expect(past.status == 422 && past.errorCode == "invalid_field")
        let far = try schedule(fx, channel, update(), at: nowSeconds() + 8 * 86_400)
        #expect(far.status == 422 && (far.errorMessage ?? "").contains("7 days"))
        let bad = try fx.publish(channel, ["send_at": "soon", "aps": update()["aps"]!])
        #expect(bad.status == 422 && bad.errorCode == "invalid_field")

        let sendAt = nowSeconds() + 600
        let dry = try fx.client.send(
            "POST", "/v1/channels/\(channel)/events?dry_run=true", token: fx.adminToken,
            json: ["send_at": .int(sendAt), "aps": update()["aps"]!])
        #expect(dry.status == 200)
        #expect(dry.json?["dry_run"] == true && dry.json?["state"] == "scheduled" && dry.json?["send_at"] == .int(sendAt))
        #expect(dry.json?["payload"]?["aps"]?["timestamp"] == .int(sendAt))
        #expect(try fx.admin("GET", "/v1/channels/\(channel)/events").json?["events"] == [], "a dry run stores nothing")

        let first = try schedule(fx, channel, update(), at: sendAt, headers: [("Idempotency-Key", "kick")])
        let again = try schedule(fx, channel, update(), at: sendAt, headers: [("Idempotency-Key", "kick")])
        #expect(first.status == 202 && again.status == 200)
        #expect(first.json?["event_id"] == again.json?["event_id"])
    }

    @Test func theListingIsNewestFirstAndPagesWithNextBefore() throws {
        let d = try DutyFixture()
        let fx = d.api
        let channel = unique("listing")
        try fx.createChannel(channel)
        var ids: [String] = []
        for i in 0..<3 { ids.append(try #require(try fx.publish(channel, update(["i": .int(Int64(i))])).json?["event_id"]?.stringValue)) }
        ids.append(try #require(try schedule(fx, channel, update(), at: nowSeconds() + 3600).json?["event_id"]?.stringValue))
        let p1 = try #require(try fx.admin("GET", "/v1/channels/\(channel)/events?limit=2").json)
        #expect(p1["events"]?.arrayValue?.compactMap { $0["event_id"]?.stringValue } == [ids[3], ids[2]])
        let next = try #require(p1["next_before"]?.intValue)
        let p2 = try #require(try fx.admin("GET", "/v1/channels/\(channel)/events?limit=2&before=\(next)").json)
        #expect(p2["events"]?.arrayValue?.compactMap { $0["event_id"]?.stringValue } == [ids[1], ids[0]])
        let next2 = try #require(p2["next_before"]?.intValue)
        let p3 = try #require(try fx.admin("GET", "/v1/channels/\(channel)/events?limit=2&before=\(next2)").json)
        #expect(p3["events"] == [] && p3["next_before"] == .null)
        let scheduled = try #require(try fx.admin("GET", "/v1/channels/\(channel)/events?state=scheduled").json)
        #expect(scheduled["events"]?.arrayValue?.compactMap { $0["event_id"]?.stringValue } == [ids[3]])
        #expect(scheduled["next_before"] == .null)
    }

    @Test func patchChangesOnlyWhatItNames() throws {
        let d = try DutyFixture()
        let fx = d.api
        let channel = unique("patch")
        try fx.createChannel(channel)
        let later = nowSeconds() + 3600
        let r = try fx.admin("PATCH", "/v1/channels/\(channel)", json: ["min_interval_ms": 250, "expires_at": .int(later)])
        #expect(r.status == 200)
        #expect(r.json?["expires_at"] == .int(later))
        #expect(r.json?["settings"]?["min_interval_ms"] == 250 && r.json?["settings"]?["catch_up"] == true)
        let off = try fx.admin("PATCH", "/v1/channels/\(channel)", json: ["catch_up": false, "expires_at": .null])
        #expect(off.json?["expires_at"] == .null && off.json?["settings"]?["catch_up"] == false)
        #expect(off.json?["settings"]?["min_interval_ms"] == 250)
        let created = try fx.admin(
            "POST", "/v1/channels", json: ["id": .string(unique("exp")), "bundle_id": "com.example.app", "expires_at": .int(later)])
        #expect(created.status == 201 && created.json?["expires_at"] == .int(later))
    }

    @Test func anExpiredBroadcastChannelIsEndedWithItsStateThenClosedAndItsAPNsChannelDeleted() throws {
        let d = try DutyFixture()
        let fx = d.api
        let channel = unique("expiry")
        let apnsID = try #require(try fx.createChannel(channel, mode: "hybrid")["apns_channel_id"]?.stringValue)
        let token = freshToken()
        #expect(try fx.subscribe(channel, token).status == 201)
        let s = try #require(try fx.publish(channel, start(["score": 0])).json?["event_id"]?.stringValue)
        _ = try fx.waitFinished(channel, s)
        let u = try #require(try fx.publish(channel, update(["score": 3])).json?["event_id"]?.stringValue)
        _ = try fx.waitFinished(channel, u)
        let at = nowSeconds() + 2
        #expect(try fx.admin("PATCH", "/v1/channels/\(channel)", json: ["expires_at": .int(at)]).status == 200)

        #expect(try Poll.until(timeout: 30) { try fx.admin("GET", "/v1/channels/\(channel)").json?["state"] == "closed" })
        let ends = fx.sim.sim.broadcasts(on: apnsID).filter { $0.event == "end" }
        #expect(ends.count == 1)
        let end = try #require(ends.first?.json?["aps"])
        #expect(end["content-state"] == ["score": 3])
        let dismissal = try #require(end["dismissal-date"]?.intValue)
        #expect(abs(dismissal - (at + 900)) <= 2, "dismissal-date now + 15 min")
        #expect(fx.sim.sim.pushes(to: token).last?.event == "end", "the token got the end too")
        // The channel is saved closed before its APNs channel is deleted (closeChannel): the
        // deletion follows within the duty's turn, not necessarily before the GET above.
        #expect(try Poll.until(timeout: 10) { fx.simulatorChannels[apnsID] == nil }, "the APNs channel was deleted")
        let listed = try #require(try fx.admin("GET", "/v1/channels/\(channel)/events?limit=1").json?["events"]?.arrayValue?.first)
        #expect(listed["event"] == "end" && listed["state"] == "done")
    }

    @Test func theRunnerSweepsExpiredSubscriptionsInsteadOfTheEngine() throws {
        let d = try DutyFixture(plan: DutyPlan(sweepIntervalMillis: 100))
        let fx = d.api
        let channel = unique("sweep")
        try fx.createChannel(channel)
        let token = freshToken()
        #expect(try fx.subscribe(channel, token, body: ["expires_at": .int(nowSeconds() - 10)]).status == 201)
        guard let store = fx.fanout.storage as? Store else { return }  // the raw row count is SQLite's
        func rows() throws -> Int64 {
            try store.db.read { c in try c.queryValue("SELECT COUNT(*) FROM subscriptions")?.int64Value ?? -1 }
        }
        #expect(try Poll.until(timeout: 10) { try rows() == 0 }, "the expired subscription's row is deleted")
    }
}
