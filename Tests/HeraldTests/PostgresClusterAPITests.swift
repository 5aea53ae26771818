import Foundation
import HeraldCore
import HeraldTestSupport
import Testing

/// Real `herald serve` processes on one PostgreSQL database, one simulator: any worker
/// answers any API request with the same answer. (The fan-out shared between workers:
/// PostgresWorkersServeTests.)
@Suite(.serialized) struct PostgresClusterAPITests {
    static let token = "hk_admin_" + String(repeating: "w", count: 40)

    /// Migrates a new database and starts `n` workers on it.
    static func workers(_ n: Int, sim: SimFixture) throws -> [ServeProcess] {
        let url = try PostgresCluster.shared().makeDatabase("workers")
        #expect(try herald(["migrate", "--db", url], env: [:]).status == 0)
        return try (0..<n).map { _ in try ServeProcess(db: url, sim: sim, extraEnv: ["HERALD_ADMIN_TOKEN": token]) }
    }

    static func send(_ w: ServeProcess, _ m: String, _ p: String, _ j: JSON? = nil, _ h: [(String, String)] = []) throws -> APIResponse {
        try w.client.send(m, p, token: token, json: j, headers: h)
    }

    /// Polls an event on `w` until it is final (nil: `timeout` passed first).
    static func waitFinal(_ w: ServeProcess, _ channel: String, _ id: String, timeout: Double) throws -> JSON? {
        var last: JSON?
        let ok = try Poll.until(timeout: timeout, interval: 0.05) {
            last = try send(w, "GET", "/v1/channels/\(channel)/events/\(id)").json
            return last.map(ServeProcess.isFinal) ?? false
        }
        return ok ? last : nil
    }

    @Test func publishOnAProgressOnBRegisterOnC() throws {
        let sim = try SimFixture()
        let w = try Self.workers(3, sim: sim)
        defer { for p in w { p.stop() } }
        let (a, b, c) = (w[0], w[1], w[2])
        #expect(
            try Self.send(a, "POST", "/v1/channels", ["id": "m", "bundle_id": "com.example.app", "environment": "sandbox"]).status == 201)
        // Every worker knows the channel at once (no cache of its own).
        for p in [b, c] { #expect(try Self.send(p, "GET", "/v1/channels/m").status == 200) }

        let tokens = makeTokens(300, seed: 33)
        let batch = try Self.send(
            c, "POST", "/v1/channels/m/subscriptions:batch", ["subscribe": .array(tokens.dropLast().map { .string($0) })])
        #expect(batch.status == 200 && batch.json?["subscribed"]?.intValue == 299, "\(batch.text)")
        #expect(try Self.send(c, "PUT", "/v1/channels/m/subscriptions/\(tokens.last!)", [:]).status == 201)
        let shown = try w.map { try Self.send($0, "GET", "/v1/channels/m").json }
        #expect(shown[0]?["subscribers"] != nil, "\(String(describing: shown[0]))")
        #expect(shown[0] == shown[1] && shown[1] == shown[2], "\(shown)")

        let published = try Self.send(a, "POST", "/v1/channels/m/events", ["aps": ["event": "update", "content-state": ["score": "1-0"]]])
        #expect(published.status == 202, "\(published.text)")
        let id = try #require(published.json?["event_id"]?.stringValue)
        // The same event, read on the other two at once: the same answer (its progress is
        // in the database, summed over the shards, not in the worker that took the publish).
        for p in [b, c] {
            let e = try Self.send(p, "GET", "/v1/channels/m/events/\(id)")
            #expect(e.status == 200 && e.json?["event_id"]?.stringValue == id, "\(e.text)")
        }

        // Delivered, whichever worker holds the shards; B sees it done.
        let final = try Self.waitFinal(b, "m", id, timeout: 30)
        #expect(final?["state"]?.stringValue == "done", "\(String(describing: final))")
        #expect(final?["sent"]?.intValue == Int64(tokens.count), "\(String(describing: final))")
        #expect(Set(tokens).isSubset(of: sim.sim.tokenCounts().keys))
        // Final, the three workers say the same.
        let answers = try w.map { try Self.send($0, "GET", "/v1/channels/m/events/\(id)").json }
        #expect(answers[0] == answers[1] && answers[1] == answers[2], "\(answers)")

        // A late joiner registered on C is owed the current state; the worker that holds
        // its shard (the one that sent the event, not C) must hear of it.
        let late = makeTokens(1, seed: 34)[0]
        #expect(try Self.send(c, "PUT", "/v1/channels/m/subscriptions/\(late)", [:]).status == 201)
        #expect(try Poll.until(timeout: 10, interval: 0.05) { !sim.sim.pushes(to: late).isEmpty })
    }

    @Test func theSameIdempotencyKeyPostedToTwoWorkersAtOnceMakesOneEvent() throws {
        let sim = try SimFixture()
        let w = try Self.workers(2, sim: sim)
        defer { for p in w { p.stop() } }
        #expect(
            try Self.send(w[0], "POST", "/v1/channels", ["id": "r", "bundle_id": "com.example.app", "environment": "sandbox"]).status == 201
        )
        for round in 0..<15 {
            let key = "race-\(round)"
            let body: JSON = ["aps": ["event": "update", "content-state": ["score": .string("\(round)-0")]]]
            let answers = Locked<[Int: APIResponse]>([:])
            let failures = Locked<[String]>([])
            let go = DispatchSemaphore(value: 0)
            let group = DispatchGroup()
            for (i, worker) in w.enumerated() {
                group.enter()
                Thread {
                    go.wait()
                    do {
                        let r = try Self.send(worker, "POST", "/v1/channels/r/events", body, [("Idempotency-Key", key)])
                        answers.withLock { $0[i] = r }
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                    }
                    group.leave()
                }.start()
            }
            go.signal()
            go.signal()
            #expect(group.wait(timeout: .now() + 30) == .success)
            let got = answers.withLock { $0 }
            #expect(failures.withLock { $0 }.isEmpty)
            let statuses = got.values.map(\.status).sorted()
            #expect(statuses == [200, 202], "round \(round): \(got.mapValues(\.text))")
            let ids = Set(got.values.compactMap { $0.json?["event_id"]?.stringValue })
            #expect(ids.count == 1, "round \(round): \(got.mapValues(\.text))")
        }
        // Fifteen keys, fifteen events: the channel's last event is the fifteenth publish.
        let last = try Self.send(w[1], "GET", "/v1/channels/r").json
        #expect(last?["last_event"]?["seq"]?.intValue == 15, "\(String(describing: last))")
    }
}
