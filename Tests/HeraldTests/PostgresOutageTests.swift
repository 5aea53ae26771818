import Foundation
import HeraldCore
import HeraldSimulator
import HeraldTestSupport
import Testing

/// PostgreSQL goes away under a running `herald serve` and comes back: the API answers 503
/// with `Retry-After` at once (never hangs), `/readyz` is 503 meanwhile, the worker retries
/// with backoff instead of spinning, and every event acknowledged with 202 before the
/// outage reaches every token once the database is back.
@Suite(.serialized) struct PostgresOutageTests {
    static let token = "hk_admin_" + String(repeating: "o", count: 40)

    @Test func theDatabaseGoesAwayAndComesBackAndNothingAcknowledgedIsLost() throws {
        let cluster = try PostgresCluster.start()
        defer { cluster.stop() }
        let url = try cluster.makeDatabase("outage")
        #expect(try herald(["migrate", "--db", url], env: [:]).status == 0)
        // Slow answers and one connection: the fan-out is still going when the database stops.
        let sim = try SimFixture { c in c.faults.latency = 1.0 }
        let serve = try ServeProcess(
            db: url, sim: sim, extraEnv: ["HERALD_ADMIN_TOKEN": Self.token, "HERALD_APNS_CONNECTIONS": "1"])
        defer { serve.stop() }
        let api = serve.client
        func send(_ m: String, _ p: String, _ j: JSON? = nil, _ h: [(String, String)] = []) throws -> APIResponse {
            try api.send(m, p, token: Self.token, json: j, headers: h)
        }
        #expect(try send("POST", "/v1/channels", ["id": "m", "bundle_id": "com.example.app", "environment": "sandbox"]).status == 201)
        let tokens = makeTokens(6_000, seed: 14)
        let batch = try send("POST", "/v1/channels/m/subscriptions:batch", ["subscribe": .array(tokens.map { .string($0) })])
        #expect(batch.status == 200, "\(batch.text)")

        // Acknowledged before the outage, and still on its way when the database stops.
        let first = try send("POST", "/v1/channels/m/events", ["aps": ["event": "update", "content-state": ["score": "1-0"]]])
        #expect(first.status == 202, "\(first.text)")
        let firstID = try #require(first.json?["event_id"]?.stringValue)
        #expect(try Poll.until(timeout: 20, interval: 0.02) { sim.sim.stats().accepted > 0 })

        try cluster.stopServer()
        let outageStart = Date()
        let reachedBefore = sim.sim.stats().tokens
        #expect(reachedBefore < tokens.count, "the fan-out ended before the outage: the test proves nothing")
        // During the outage: a JSON 503 with Retry-After, quickly; not ready; alive.
        let t0 = Date()
        let during = try send(
            "POST", "/v1/channels/m/events", ["aps": ["event": "update", "content-state": ["score": "2-0"]]],
            [("Idempotency-Key", "during-outage")])
        #expect(Date().timeIntervalSince(t0) < 10, "a publish during the outage took \(Date().timeIntervalSince(t0)) s")
        #expect(during.status == 503, "\(during.text)")
        #expect(during.errorCode == "unavailable", "\(during.text)")
        #expect(Int(during.header("retry-after") ?? "") ?? 0 >= 1, "\(during.headers)")
        #expect(try send("GET", "/v1/channels/m/events/\(firstID)").status == 503)
        #expect(try api.send("GET", "/readyz").status == 503)
        #expect(try api.send("GET", "/healthz").status == 200)
        let logBefore = serve.output.split(separator: "\n").count
        Thread.sleep(forTimeInterval: 4)
        let linesDuringOutage = serve.output.split(separator: "\n").count - logBefore
        try cluster.startServer()
        let outage = Date().timeIntervalSince(outageStart)

        #expect(try Poll.until(timeout: 30, interval: 0.1) { try api.send("GET", "/readyz").status == 200 })
        // Backoff, not a spin: a few lines per second of outage at most.
        #expect(linesDuringOutage < 60, "\(linesDuringOutage) log lines in 4 s of outage: \(serve.output.suffix(4000))")

        // The event acknowledged before the outage finishes and reaches every token.
        func waitFinal(_ id: String) throws -> JSON? {
            var last: JSON?
            _ = try Poll.until(timeout: 90, interval: 0.05) {
                last = try send("GET", "/v1/channels/m/events/\(id)").json
                return last.map(ServeProcess.isFinal) ?? false
            }
            return last
        }
        let final = try waitFinal(firstID)
        #expect(final?["state"]?.stringValue == "done", "\(String(describing: final)) \(serve.output.suffix(3000))")
        #expect(final?["targets"]?.intValue == Int64(tokens.count), "\(String(describing: final))")
        let got = sim.sim.tokens(thatReceived: try #require(sim.sim.pushes(to: tokens[0]).first?.payload))
        #expect(got.count == tokens.count, "\(got.count) of \(tokens.count) tokens received the event (outage \(outage) s)")

        // The publish refused during the outage was not stored: the same key makes it now.
        let retried = try send(
            "POST", "/v1/channels/m/events", ["aps": ["event": "update", "content-state": ["score": "2-0"]]],
            [("Idempotency-Key", "during-outage")])
        #expect(retried.status == 202, "\(retried.text)")
        let retriedID = try #require(retried.json?["event_id"]?.stringValue)
        let after = try waitFinal(retriedID)
        #expect(after?["state"]?.stringValue == "done" && after?["sent"]?.intValue == Int64(tokens.count), "\(String(describing: after))")
        #expect(!serve.output.contains("password"))
    }
}
