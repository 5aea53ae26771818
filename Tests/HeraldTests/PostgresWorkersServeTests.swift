import Foundation
import HeraldCore
import HeraldSimulator
import HeraldTestSupport
import Testing

/// Several `herald serve` processes on one PostgreSQL database sharing a channel's fan-out
/// (contract, "Beyond one machine"): real workers, the real simulator as APNs, a short
/// `HERALD_LEASE_SECONDS`. The simulator's ledger says what each token got.
@Suite(.serialized) struct PostgresWorkersServeTests {
    /// Three workers, five updates back to back (published on the workers in turn): every
    /// token's last push is the fifth, never an older after a newer, timestamps strictly
    /// increasing; the fifth is `done` with every target reached, read the same on each.
    @Test func threeWorkersShareFiveBackToBackUpdates() throws {
        let n = WorkerCluster.tokenCount("HERALD_TEST_WORKERS_TOKENS", default: 30_000)
        let t0 = Date()
        let c = try WorkerCluster(workers: 3, tokens: n)
        let t1 = Date()
        var ids: [String] = []
        for i in 1...5 { ids.append(try c.publish(on: c.workers[i % 3], score: i)) }
        let done = try c.waitEvent(ids[4], on: c.workers[1], timeout: 120) { $0["state"]?.stringValue == "done" }
        if done == nil { c.dump(ids) }
        let last = try #require(done)
        #expect(last["sent"]?.intValue == Int64(n) && last["targets"]?.intValue == Int64(n), "\(last)")
        for id in ids.dropLast() { #expect(try c.waitEvent(id, on: c.workers[2], timeout: 60) != nil) }
        // The same progress on every worker.
        for w in c.workers { #expect(try c.event(ids[4], on: w) == c.event(ids[4], on: c.workers[0])) }

        let t2 = Date()
        let fifth = try c.timestamp(of: ids[4])
        var notLast = 0
        var disorder = 0
        // Five distinct payloads: each parsed once.
        var stampOf: [[UInt8]: Int64] = [:]
        for t in c.tokens {
            let stamps = c.sim.sim.pushes(to: t).compactMap { p -> Int64? in
                if let s = stampOf[p.payload] { return s }
                let s = p.timestamp
                stampOf[p.payload] = s
                return s
            }
            if stamps.last != fifth { notLast += 1 }
            if zip(stamps, stamps.dropFirst()).contains(where: { $0 >= $1 }) { disorder += 1 }
        }
        #expect(notLast == 0, "\(notLast) of \(n) tokens did not end on the fifth update")
        #expect(disorder == 0, "\(disorder) tokens got an older update after a newer one (or one twice)")
        // Each worker sent part of it.
        for w in c.workers { #expect(w.output.contains("\"fanout.lease_taken\"")) }
        print(
            "workers: \(n) tokens, five updates: \(c.sim.sim.stats().accepted) pushes; setup \(t1.timeIntervalSince(t0)) s, "
                + "fan-out \(t2.timeIntervalSince(t1)) s, ledger check \(Date().timeIntervalSince(t2)) s")
    }

    /// SIGKILL one of three workers mid fan-out: once its leases expire the others resume its
    /// shards from their last checkpoint; every token is reached, the event is `done`, and
    /// duplicates stay within the window docs/operations.md states (one worker's holding:
    /// 32 batches of 500).
    @Test func aKilledWorkersShardsAreResumedByTheOthers() throws {
        let n = WorkerCluster.tokenCount("HERALD_TEST_WORKERS_KILL_TOKENS", default: 20_000)
        let c = try WorkerCluster(workers: 3, tokens: n, slow: true)
        let id = try c.publish(on: c.workers[0], score: 1)
        // Every worker has sent some of it.
        #expect(try Poll.until(timeout: 60, interval: 0.01) { c.sim.sim.stats().accepted >= n / 4 })
        c.workers[1].kill()
        let atKill = c.sim.sim.stats().accepted
        #expect(atKill < n, "the fan-out finished before the kill")
        let e = try #require(try c.waitEvent(id, on: c.workers[0], timeout: 90))
        #expect(e["state"]?.stringValue == "done", "\(e)")
        let counts = c.sim.sim.tokenCounts()
        let missing = c.tokens.filter { counts[$0] == nil }.count
        let duplicates = counts.values.filter { $0 > 1 }.count
        print("workers: SIGKILL after \(atKill) of \(n); \(duplicates) sent twice")
        #expect(missing == 0, "\(missing) tokens never got the event")
        #expect(duplicates <= 32 * 500)
        #expect(c.workers[0].output.contains("fanout.lease_grown") || c.workers[2].output.contains("fanout.lease_grown"))
    }

    /// SIGSTOP one of three workers past its lease, then SIGCONT: the others finish its
    /// shards, and it sends nothing more for them beyond what it had already written to
    /// APNs (at most the simulator's concurrent streams on its one connection).
    @Test func aStoppedWorkerSendsNothingMoreOnceItsLeaseIsGone() throws {
        let n = WorkerCluster.tokenCount("HERALD_TEST_WORKERS_STOP_TOKENS", default: 20_000)
        let c = try WorkerCluster(workers: 3, tokens: n, slow: true)
        let id = try c.publish(on: c.workers[0], score: 1)
        #expect(try Poll.until(timeout: 60, interval: 0.01) { c.sim.sim.stats().accepted >= n / 4 })
        let stopped = c.workers[1]
        kill(stopped.pid, SIGSTOP)
        let e = try #require(try c.waitEvent(id, on: c.workers[0], timeout: 90))
        #expect(e["state"]?.stringValue == "done", "\(e)")
        let atDone = c.sim.sim.stats().accepted
        kill(stopped.pid, SIGCONT)
        // It notices: its lease is given up, and nothing of it is in flight any more.
        #expect(
            try Poll.until(timeout: 30, interval: 0.02) {
                stopped.output.contains("\"fanout.lease_given_up\"")
                    && (try? stopped.metrics().sum("herald_apns_streams_in_flight")) == 0
            })
        let after = c.sim.sim.stats().accepted
        print("workers: SIGSTOP; \(after - atDone) pushes after SIGCONT")
        #expect(after - atDone <= WorkerCluster.slowStreams, "\(after - atDone) pushes after SIGCONT")
        let counts = c.sim.sim.tokenCounts()
        #expect(c.tokens.allSatisfy { counts[$0] != nil })
    }

    /// SIGTERM hands a worker's leases back at once: with 30 s leases, the other resumes its
    /// shards long before they could have expired, and the event is `done`.
    @Test func aTerminatedWorkerHandsItsLeasesBackAtOnce() throws {
        let n = WorkerCluster.tokenCount("HERALD_TEST_WORKERS_TERM_TOKENS", default: 20_000)
        let c = try WorkerCluster(workers: 2, tokens: n, slow: true, leaseSeconds: 30)
        let id = try c.publish(on: c.workers[0], score: 1)
        #expect(try Poll.until(timeout: 60, interval: 0.01) { c.sim.sim.stats().accepted >= n / 4 })
        let stopped = Date()
        c.workers[1].stop()
        let e = try #require(try c.waitEvent(id, on: c.workers[0], timeout: 25))
        let took = Date().timeIntervalSince(stopped)
        print("workers: SIGTERM; done \(took) s later")
        #expect(e["state"]?.stringValue == "done", "\(e)")
        #expect(took < 25, "the shards waited for their 30 s leases to expire")
        let counts = c.sim.sim.tokenCounts()
        #expect(c.tokens.allSatisfy { counts[$0] != nil })
    }

    /// Late joiners registered on one worker are caught up by whichever worker holds their
    /// shard (the registering worker announces the others' over `NOTIFY`).
    @Test func lateJoinersRegisteredOnOneWorkerAreCaughtUpByTheirShardsHolders() throws {
        let c = try WorkerCluster(workers: 3, tokens: 300)
        let id = try c.publish(on: c.workers[0], score: 7)
        #expect(try c.waitEvent(id, on: c.workers[0], timeout: 60) { $0["state"]?.stringValue == "done" } != nil)
        let payload = try #require(c.sim.sim.pushes(to: c.tokens[0]).last?.payload)
        let late = makeTokens(48, seed: 77)
        let r = try c.workers[2].client.send(
            "POST", "/v1/channels/final/subscriptions:batch", token: WorkerCluster.admin,
            json: ["subscribe": .array(late.map { .string($0) })])
        #expect(r.status == 200)
        let reached = try Poll.until(timeout: 30, interval: 0.05) {
            late.allSatisfy { c.sim.sim.pushes(to: $0).last?.payload == payload }
        }
        if !reached { c.dump([id]) }
        #expect(reached, "\(late.filter { c.sim.sim.pushes(to: $0).isEmpty }.count) late joiners never got the current state")
        #expect(late.allSatisfy { c.sim.sim.pushes(to: $0).count == 1 })
    }
}

/// A database, the simulator and `workers` `herald serve` processes on it, with a channel
/// `final` of `tokens` subscribers registered through the first worker.
final class WorkerCluster {
    static let admin = "hk_admin_" + String(repeating: "w", count: 40)
    /// With `slow`: the simulator's concurrent streams per connection (one connection per
    /// worker, 10 ms per answer): about 2,000 pushes/s per worker.
    static let slowStreams = 20

    let sim: SimFixture
    let url: String
    var workers: [ServeProcess] = []
    let tokens: [String]

    static func tokenCount(_ env: String, default n: Int) -> Int {
        ProcessInfo.processInfo.environment[env].flatMap { Int($0) } ?? n
    }

    /// `tokenList` replaces the `tokens` random ones; `simulator` adjusts the simulator
    /// (its faults) after `slow`.
    init(
        workers count: Int, tokens n: Int, slow: Bool = false, leaseSeconds: Int = 2, tokenList: [String]? = nil,
        simulator: (inout SimulatorConfig) -> Void = { _ in }
    ) throws {
        sim = try SimFixture {
            if slow {
                $0.maxConcurrentStreams = UInt32(Self.slowStreams)
                $0.faults.latency = 0.01
            }
            simulator(&$0)
        }
        url = try PostgresCluster.shared().makeDatabase("workers")
        let r = try herald(["migrate", "--db", url], env: [:])
        guard r.status == 0 else { throw WorkerClusterError(message: r.err) }
        var env = ["HERALD_ADMIN_TOKEN": Self.admin, "HERALD_LEASE_SECONDS": "\(leaseSeconds)"]
        if slow { env["HERALD_APNS_CONNECTIONS"] = "1" }
        for _ in 0..<count { workers.append(try ServeProcess(db: url, sim: sim, extraEnv: env)) }
        let w = workers[0]
        let made = try w.client.send(
            "POST", "/v1/channels", token: Self.admin, json: ["id": "final", "bundle_id": "com.example.app", "environment": "sandbox"])
        guard made.status == 201 else { throw WorkerClusterError(message: String(decoding: made.body, as: UTF8.self)) }
        tokens = tokenList ?? makeTokens(n, seed: 14)
        let n = tokens.count
        for start in stride(from: 0, to: n, by: 10_000) {
            let chunk = tokens[start..<min(n, start + 10_000)].map { JSON.string($0) }
            let b = try w.client.send(
                "POST", "/v1/channels/final/subscriptions:batch", token: Self.admin, json: ["subscribe": .array(chunk)])
            guard b.status == 200 else { throw WorkerClusterError(message: String(decoding: b.body, as: UTF8.self)) }
        }
    }

    /// Publishes update `score` through `w`; returns the event id.
    func publish(on w: ServeProcess, score: Int) throws -> String {
        let r = try w.client.send(
            "POST", "/v1/channels/final/events", token: Self.admin,
            json: ["aps": ["event": "update", "content-state": ["score": .int(Int64(score))]]])
        guard r.status == 202, let id = r.json?["event_id"]?.stringValue else {
            throw WorkerClusterError(message: String(decoding: r.body, as: UTF8.self))
        }
        return id
    }

    func event(_ id: String, on w: ServeProcess) throws -> JSON? {
        try w.client.send("GET", "/v1/channels/final/events/\(id)", token: Self.admin).json
    }

    /// Polls event `id` on `w` until `condition` holds (nil: `timeout` passed first).
    func waitEvent(_ id: String, on w: ServeProcess, timeout: Double, until condition: (JSON) -> Bool = ServeProcess.isFinal) throws
        -> JSON?
    {
        var last: JSON?
        let ok = try Poll.until(timeout: timeout, interval: 0.05) {
            last = try event(id, on: w)
            return last.map(condition) ?? false
        }
        return ok ? last : nil
    }

    /// The `aps.timestamp` event `id` was sent with.
    func timestamp(of id: String) throws -> Int64 {
        let e = try #require(try event(id, on: workers[0]))
        return try #require(e["aps_timestamp"]?.intValue, "\(e)")
    }

    /// What the workers did (printed when a test fails).
    func dump(_ ids: [String]) {
        for id in ids { print("event \(id): \(String(describing: try? event(id, on: workers[0])))") }
        for (i, w) in workers.enumerated() {
            for line in w.output.split(separator: "\n") where line.contains("fanout.") || line.contains("error") {
                print("worker \(i): \(line)")
            }
        }
    }

    deinit {
        for w in workers {
            kill(w.pid, SIGCONT)
            w.stop()
        }
    }
}

struct WorkerClusterError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
