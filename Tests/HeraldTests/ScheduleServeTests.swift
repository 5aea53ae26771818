import Foundation
import HeraldCore
import HeraldTestSupport
import Testing

/// Schedules and channel expiry in real `herald serve` processes, against the simulator:
/// one SQLite file across a SIGKILL and a restart, and two workers on one PostgreSQL
/// database (the duty lock: an event goes out once, also when its holder dies).
@Suite(.serialized) struct ScheduleServeTests {
    static let adminToken = "hk_admin_" + String(repeating: "s", count: 40)

    func post(_ serve: ServeProcess, _ path: String, _ body: JSON) throws -> APIResponse { try call(serve, "POST", path, body) }

    /// One request with the admin token the processes were given.
    func call(_ serve: ServeProcess, _ method: String, _ path: String, _ body: JSON? = nil) throws -> APIResponse {
        try serve.client.send(method, path, token: Self.adminToken, json: body)
    }

    /// Polls the event until it is final; nil after `timeout`.
    func waitEvent(_ serve: ServeProcess, _ channel: String, _ id: String, timeout: Double = 30) throws -> JSON? {
        var last: JSON?
        let ok = try Poll.until(timeout: timeout, interval: 0.02) {
            last = try call(serve, "GET", "/v1/channels/\(channel)/events/\(id)").json
            return last.map(ServeProcess.isFinal) ?? false
        }
        return ok ? last : nil
    }

    func eventID(_ r: APIResponse) throws -> String {
        try #require(r.json?["event_id"]?.stringValue, "\(r.status) \(r.text)")
    }

    func startBody(_ state: JSON) -> JSON {
        [
            "aps": [
                "event": "start", "content-state": state, "attributes-type": "MatchAttributes", "attributes": ["matchID": "final"],
                "alert": ["title": "Kick-off", "body": "Follow it live"],
            ]
        ]
    }

    func updateBody(_ state: JSON, timestamp: Int64? = nil, sendAt: Int64? = nil) -> JSON {
        var aps: [String: JSON] = ["event": "update", "content-state": state]
        if let timestamp { aps["timestamp"] = .int(timestamp) }
        var o: [String: JSON] = ["aps": .object(aps)]
        if let sendAt { o["send_at"] = .int(sendAt) }
        return .object(o)
    }

    func hex(_ byte: String) -> String { String(repeating: byte, count: 32) }

    @Test func aScheduledStartFiresOnTimeAfterARestartAndTheRestOfTheScheduleHolds() throws {
        let sim = try SimFixture()
        let db = sim.dir + "/herald.db"
        let env = ["HERALD_ADMIN_TOKEN": Self.adminToken]
        var serve = try ServeProcess(db: db, sim: sim, extraEnv: env)
        defer { serve.stop() }
        #expect(try post(serve, "/v1/channels", ["id": "final", "bundle_id": "com.example.app", "environment": "sandbox"]).status == 201)
        let starter = hex("a1")
        let follower = hex("b2")
        #expect(try call(serve, "PUT", "/v1/channels/final/subscriptions/\(starter)", ["kind": "push-to-start"]).status == 201)
        #expect(try call(serve, "PUT", "/v1/channels/final/subscriptions/\(follower)", ["kind": "activity"]).status == 201)

        let sendAt = Int64(Date().timeIntervalSince1970) + 5
        var withTime = try #require(startBody(["home": 0]).objectValue)
        withTime["send_at"] = .int(sendAt)
        let kickoff = try eventID(try post(serve, "/v1/channels/final/events", .object(withTime)))
        let cancelled = try eventID(try post(serve, "/v1/channels/final/events", updateBody(["never": true], sendAt: sendAt)))
        #expect(try call(serve, "DELETE", "/v1/channels/final/events/\(cancelled)").json?["state"] == "cancelled")

        // SIGKILL well before send_at; a new process on the same file takes the schedule.
        serve.kill()
        serve = try ServeProcess(db: db, sim: sim, extraEnv: env)
        let done = try #require(try waitEvent(serve, "final", kickoff, timeout: 30))
        #expect(done["state"] == "done")
        let starts = sim.sim.pushes(to: starter)
        #expect(starts.count == 1 && starts.first?.event == "start")
        let lateness = (starts.first?.receivedAt ?? 0) - Double(sendAt)
        print("schedule: a start scheduled before a SIGKILL reached the simulator \(Int(lateness * 1000)) ms after send_at")
        #expect(lateness >= 0 && lateness < 1.0, "on time after the restart: \(lateness) s after send_at")
        #expect(try call(serve, "GET", "/v1/channels/final/events/\(cancelled)").json?["state"] == "cancelled")
        #expect(sim.sim.pushes(to: follower).isEmpty, "the cancelled update never went out")

        // Overtaken: a live update with a newer timestamp before the scheduled one's time.
        let now = Int64(Date().timeIntervalSince1970)
        let overtaken = try eventID(
            try post(serve, "/v1/channels/final/events", updateBody(["s": "scheduled"], timestamp: now + 1, sendAt: now + 2)))
        let live = try eventID(try post(serve, "/v1/channels/final/events", updateBody(["s": "live"], timestamp: now + 5)))
        let superseded = try #require(try waitEvent(serve, "final", overtaken, timeout: 30))
        #expect(superseded["state"] == "superseded" && superseded["superseded_by"] == .string(live))
        #expect(sim.sim.pushes(to: follower).map { $0.json?["aps"]?["content-state"] } == [["s": "live"]])

        // Expiry of a broadcast channel: an end with its state, then closed, APNs channel gone.
        let bc = try post(
            serve, "/v1/channels", ["id": "gate", "bundle_id": "com.example.app", "environment": "sandbox", "mode": "broadcast"])
        let apnsID = try #require(bc.json?["apns_channel_id"]?.stringValue, "\(bc.text)")
        #expect(sim.sim.channels()[apnsID] != nil)
        let s = try eventID(try post(serve, "/v1/channels/gate/events", startBody(["gate": "B1"])))
        _ = try waitEvent(serve, "gate", s, timeout: 30)
        let u = try eventID(try post(serve, "/v1/channels/gate/events", updateBody(["gate": "B12"])))
        _ = try waitEvent(serve, "gate", u, timeout: 30)
        let at = Int64(Date().timeIntervalSince1970) + 2
        #expect(try call(serve, "PATCH", "/v1/channels/gate", ["expires_at": .int(at)]).json?["expires_at"] == .int(at))
        #expect(try Poll.until(timeout: 30, interval: 0.05) { try call(serve, "GET", "/v1/channels/gate").json?["state"] == "closed" })
        let ends = sim.sim.broadcasts(on: apnsID).filter { $0.event == "end" }
        #expect(ends.count == 1)
        let end = try #require(ends.first)
        #expect(end.json?["aps"]?["content-state"] == ["gate": "B12"])
        let dismissal = try #require(end.json?["aps"]?["dismissal-date"]?.intValue)
        #expect(abs(Double(dismissal) - (end.receivedAt + 900)) <= 2, "dismissal-date is now + 15 min")
        #expect(end.receivedAt >= Double(at))
        #expect(sim.sim.channels()[apnsID] == nil, "the APNs channel was deleted")
        #expect(serve.output.contains("\"why\":\"expired\""))
    }

    @Test func twoPostgreSQLWorkersSendAScheduledEventOnceEvenWhenTheLockHolderDies() throws {
        let url = try PostgresCluster.shared().makeDatabase("duty")
        #expect(try herald(["migrate", "--db", url], env: [:]).status == 0)  // serve does not migrate PostgreSQL
        let sim = try SimFixture()
        let env = ["HERALD_ADMIN_TOKEN": Self.adminToken]
        let a = try ServeProcess(db: url, sim: sim, extraEnv: env)
        defer { a.stop() }
        let b = try ServeProcess(db: url, sim: sim, extraEnv: env)
        defer { b.stop() }
        func holds(_ s: ServeProcess) -> Bool { (try? s.metrics().sum("herald_duty_lock_held")) == 1 }
        #expect(Poll.until(timeout: 10, interval: 0.05) { holds(a) || holds(b) })
        #expect(!(holds(a) && holds(b)), "one holder")

        #expect(try post(a, "/v1/channels", ["id": "final", "bundle_id": "com.example.app", "environment": "sandbox"]).status == 201)
        let starter = hex("c3")
        #expect(try call(b, "PUT", "/v1/channels/final/subscriptions/\(starter)", ["kind": "push-to-start"]).status == 201)
        let sendAt = Int64(Date().timeIntervalSince1970) + 4
        var body = try #require(startBody(["home": 0]).objectValue)
        body["send_at"] = .int(sendAt)
        // Posted to the worker that does not hold the lock: the holder finds it by polling.
        let (holder, other) = holds(a) ? (a, b) : (b, a)
        let id = try eventID(try post(other, "/v1/channels/final/events", .object(body)))
        holder.kill()
        #expect(Poll.until(timeout: 10, interval: 0.05) { holds(other) }, "the survivor takes the lock")
        let done = try #require(try waitEvent(other, "final", id, timeout: 30))
        #expect(done["state"] == "done")
        #expect(Poll.until(timeout: 5) { !sim.sim.pushes(to: starter).isEmpty })
        usleep(500_000)  // a second push, if any, would be as fast as the first
        let got = sim.sim.pushes(to: starter)
        #expect(got.count == 1, "sent once: \(got.count)")
        let lateness = (got.first?.receivedAt ?? 0) - Double(sendAt)
        print("schedule: two PostgreSQL workers, holder killed: the start reached the simulator \(Int(lateness * 1000)) ms after send_at")
        #expect(lateness >= 0 && lateness < 1.0, "on time: \(lateness) s")
    }
}
