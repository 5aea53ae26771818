import Foundation
import HeraldCore
import HeraldSimulator
import HeraldTestSupport
import Testing

/// APNs misbehaving under a real `herald serve` (issue #6, "Faults"): error storms, 429
/// bursts with Retry-After, GOAWAY every N streams, latency, and APNs restarting mid
/// fan-out. Every live subscriber still gets the event, retries stay within what the faults
/// explain, every event ends, and `/metrics` says what happened.
///
/// `herald serve` retries with its defaults: 6 attempts per request, backoff bounds 0.5, 1,
/// 2, 4, 8 s (Sources/HeraldSender/Backoff.swift), `Retry-After` as a floor; 4 token
/// connections.
extension FaultTests {
    @Suite struct APNSStorms {
        static let pool = ["pool": "token_sandbox"]
        static let maxAttempts = 6
        /// The longest a request can wait between its attempts without Retry-After: the sum
        /// of the backoff bounds (0.5 + 1 + 2 + 4 + 8 s).
        static let worstBackoff = 15.5

        /// 5 % of answers are 500 or 503 and every answer takes 20 ms more: each token gets
        /// the event exactly once, and every error answer is exactly one retry — in the
        /// event's `retried`, in `herald_apns_retries_total`, and no more than a 5 % error
        /// rate can explain.
        @Test func aFivePercentErrorStormStillReachesEveryoneWithExactlyOneRetryPerError() throws {
            let h = try ServedHerald { $0.maxConcurrentStreams = 200 }
            h.sim.sim.setFaults(
                faults {
                    $0.errorRates = [500: 0.025, 503: 0.025]
                    $0.latency = 0.02
                })
            try h.channel("storm")
            let tokens = makeTokens(4_000, seed: 601)
            try h.subscribe("storm", tokens)
            let id = try h.publishAccepted("storm", update(1))
            let e = try #require(try h.serve.waitEvent("storm", id, timeout: 60 + Self.worstBackoff), "the event never ended")

            #expect(e["state"]?.stringValue == "done")
            #expect(e["sent"]?.intValue == Int64(tokens.count))
            #expect(e["failed"]?.intValue == 0)
            let counts = h.sim.sim.tokenCounts()
            #expect(Set(counts.keys) == Set(tokens), "every subscriber, and only them")
            #expect(counts.values.allSatisfy { $0 == 1 }, "an error answer is not a delivery: no duplicates")

            let answers = h.sim.sim.stats().responses
            let errors = (answers[500] ?? 0) + (answers[503] ?? 0)
            let m = try h.serve.metrics()
            print(
                "storm: \(errors) error answers, retried \(e["retried"]?.intValue ?? -1), metrics \(m.sum("herald_apns_retries_total", Self.pool))"
            )
            #expect(errors > 0)
            #expect(e["retried"]?.intValue == Int64(errors))
            #expect(m.sum("herald_apns_retries_total", Self.pool) == Double(errors))
            // The bound: with an error probability p ≈ 0.05 per attempt, a token needs
            // p/(1-p) retries on average; the retries of n tokens stay under n·p/(1-p) plus
            // six standard deviations (sqrt(n·p)/(1-p)).
            let p = 1 - (1 - 0.025) * (1 - 0.025)
            let n = Double(tokens.count)
            let bound = n * p / (1 - p) + 6 * (n * p).squareRoot() / (1 - p)
            #expect(Double(errors) <= bound, "\(errors) retries for \(tokens.count) tokens at 5 %")
            // Final results: every request delivered, none exhausted.
            #expect(m.sum("herald_apns_requests_total", Self.pool.merging(["result": "delivered"]) { $1 }) == n)
            #expect(m.sum("herald_apns_requests_total", Self.pool.merging(["result": "exhausted"]) { $1 }) == 0)
            // The added latency shows in the request durations.
            let seconds = m.sum("herald_apns_request_duration_seconds_sum", Self.pool)
            let requests = m.sum("herald_apns_request_duration_seconds_count", Self.pool)
            #expect(requests == n + Double(errors))
            #expect(seconds / requests >= 0.02)
        }

        /// A burst of 429s with `Retry-After: 3`: every request is refused once, none comes
        /// back before the 3 seconds APNs asked for, then everyone gets the event once.
        @Test func aTooManyRequestsBurstIsRetriedOnlyAfterRetryAfter() throws {
            let h = try ServedHerald { $0.maxConcurrentStreams = 1000 }
            try h.channel("burst")
            let tokens = makeTokens(2_000, seed: 602)
            try h.subscribe("burst", tokens)
            let retryAfter = 3
            h.sim.sim.setFaults(
                faults {
                    $0.errorRates = [429: 1]
                    $0.retryAfter = retryAfter
                })
            let id = try h.publishAccepted("burst", update(2))
            // The first 429 goes out no later than this.
            #expect(Poll.until(timeout: 30, interval: 0.002) { (h.sim.sim.stats().responses[429] ?? 0) > 0 })
            let firstRefusal = Date()
            // Every request has been refused once: the burst ends.
            #expect(Poll.until(timeout: 30, interval: 0.002) { (h.sim.sim.stats().responses[429] ?? 0) >= tokens.count })
            h.sim.sim.setFaults(SimulatorFaults())
            #expect(Poll.until(timeout: 30, interval: 0.002) { h.sim.sim.stats().accepted > 0 })
            let firstDelivery = Date().timeIntervalSince(firstRefusal)
            let e = try #require(try h.serve.waitEvent("burst", id, timeout: 60), "the event never ended")

            let refusals = h.sim.sim.stats().responses[429] ?? 0
            print("burst: \(refusals) answers 429, first delivery \(String(format: "%.2f", firstDelivery)) s after the first")
            // Retry-After is a floor: nothing came back sooner (less the time the test took
            // to see the first 429). Without it the first retry would come after 0.25-0.5 s.
            #expect(firstDelivery >= Double(retryAfter) - 0.5)
            // No request was refused twice: the burst was over when they came back.
            #expect(refusals == tokens.count)
            #expect(e["state"]?.stringValue == "done")
            #expect(e["sent"]?.intValue == Int64(tokens.count))
            #expect(e["retried"]?.intValue == Int64(refusals))
            let counts = h.sim.sim.tokenCounts()
            #expect(Set(counts.keys) == Set(tokens) && counts.values.allSatisfy { $0 == 1 })
            let m = try h.serve.metrics()
            #expect(m.sum("herald_apns_retries_total", Self.pool) == Double(refusals))
            #expect(m.sum("herald_apns_requests_total", Self.pool.merging(["result": "delivered"]) { $1 }) == Double(tokens.count))
        }

        /// APNs sends GOAWAY after every 300 streams of a connection: the streams it did not
        /// process are resent on a new connection (not counted as retries), nobody is
        /// missed or served twice, and the metrics count the GOAWAYs and reconnections.
        @Test func goAwayEveryThreeHundredStreamsResendsOnlyWhatWasNotProcessed() throws {
            let streamsPerConnection = 300
            let h = try ServedHerald { $0.maxConcurrentStreams = 200 }
            h.sim.sim.setFaults(
                faults {
                    $0.goAwayAfterStreams = streamsPerConnection
                    $0.latency = 0.002
                })
            try h.channel("goaway")
            let tokens = makeTokens(6_000, seed: 603)
            try h.subscribe("goaway", tokens)
            let id = try h.publishAccepted("goaway", update(3))
            let e = try #require(try h.serve.waitEvent("goaway", id, timeout: 60), "the event never ended")

            #expect(e["state"]?.stringValue == "done")
            #expect(e["sent"]?.intValue == Int64(tokens.count))
            #expect(e["retried"]?.intValue == 0, "a stream above GOAWAY's last stream id is resent, not retried")
            let counts = h.sim.sim.tokenCounts()
            #expect(Set(counts.keys) == Set(tokens))
            #expect(counts.values.allSatisfy { $0 == 1 }, "\(counts.values.filter { $0 > 1 }.count) tokens got it twice")

            let stats = h.sim.sim.stats()
            let m = try h.serve.metrics()
            let goaways = Int(m.sum("herald_apns_goaways_total", Self.pool))
            let connects = Int(m.sum("herald_apns_connects_total", Self.pool))
            print(
                "goaway: \(stats.requests) requests on \(stats.connections) connections, \(goaways) GOAWAYs, \(connects) connects, \(Int(m.sum("herald_apns_refused_streams_total", Self.pool))) streams resent"
            )
            // Each connection serves at most 300 streams, and each that did got a GOAWAY; the
            // ones still open (at most the pool's 4) may not have reached 300 yet.
            #expect(stats.requests <= streamsPerConnection * stats.connections)
            #expect(goaways >= stats.requests / streamsPerConnection - 4)
            #expect(goaways <= stats.connections)
            #expect(connects >= goaways)
            #expect(m.sum("herald_apns_retries_total", Self.pool) == 0)
        }

        /// The simulator dies and comes back on the same port in the middle of a fan-out:
        /// requests in flight are retried once on new connections, everyone gets the event,
        /// and only what was in flight at the restart can arrive twice.
        @Test func apnsRestartingMidFanOutLosesNobody() throws {
            let streams = 100
            let connections = 4  // herald serve's default token connections
            let h = try ServedHerald { $0.maxConcurrentStreams = UInt32(streams) }
            h.sim.sim.setFaults(faults { $0.latency = 0.002 })
            try h.channel("restart")
            let tokens = makeTokens(20_000, seed: 604)
            try h.subscribe("restart", tokens)
            let id = try h.publishAccepted("restart", update(4))
            #expect(Poll.until(timeout: 60, interval: 0.002) { h.sim.sim.stats().accepted >= 5_000 })
            let old = h.sim.sim
            try h.sim.restart {
                $0.maxConcurrentStreams = UInt32(streams)
                $0.faults.latency = 0.002
            }
            // The old simulator's loops are stopped: its ledger is final.
            let before = old.tokenCounts()
            let e = try #require(try h.serve.waitEvent("restart", id, timeout: 60 + Self.worstBackoff), "the event never ended")
            let after = h.sim.sim.tokenCounts()

            #expect(e["state"]?.stringValue == "done")
            #expect(e["sent"]?.intValue == Int64(tokens.count))
            #expect(e["failed"]?.intValue == 0)
            #expect(Set(before.keys).union(after.keys) == Set(tokens), "every subscriber, across both lives of APNs")
            #expect(before.values.allSatisfy { $0 == 1 } && after.values.allSatisfy { $0 == 1 })
            // Twice only if APNs took the request and died before answering: at most what was
            // in flight, the connections times the streams APNs allowed on each.
            let inFlight = connections * streams
            let twice = Set(before.keys).intersection(after.keys).count
            let m = try h.serve.metrics()
            let retries = Int(m.sum("herald_apns_retries_total", Self.pool))
            print(
                "restart: \(before.count) before, \(after.count) after, \(twice) twice, \(retries) retries, \(Int(m.sum("herald_apns_connects_total", Self.pool))) connects"
            )
            #expect(twice <= inFlight)
            // Each request cut by the restart is retried once: queued requests wait for a
            // connection without using attempts, so a retry only meets the new APNs.
            #expect(retries >= twice)
            #expect(retries <= inFlight)
            #expect(e["retried"]?.intValue == Int64(retries))
            #expect(m.sum("herald_apns_connects_total", Self.pool) >= Double(2 * connections))
            #expect(m.sum("herald_apns_requests_total", Self.pool.merging(["result": "delivered"]) { $1 }) == Double(tokens.count))
        }

        /// APNs answers 503 to everything, for good: each request is tried 6 times, then
        /// given up; the event ends (`failed` counts them) within the sum of the backoffs,
        /// and the metrics say `exhausted`.
        @Test func aPermanentOutageEndsTheEventAfterSixAttemptsPerRequest() throws {
            let h = try ServedHerald { $0.maxConcurrentStreams = 100 }
            h.sim.sim.setFaults(faults { $0.errorRates = [503: 1] })
            try h.channel("down")
            let tokens = makeTokens(100, seed: 605)
            try h.subscribe("down", tokens)
            let start = Date()
            let id = try h.publishAccepted("down", update(5))
            let e = try #require(
                try h.serve.waitEvent("down", id, timeout: Self.worstBackoff + 30), "the event was still retrying")
            let took = Date().timeIntervalSince(start)
            print("outage: ended in \(String(format: "%.1f", took)) s")
            let n = Int64(tokens.count)
            #expect(e["state"]?.stringValue == "done")
            #expect(e["sent"]?.intValue == 0)
            #expect(e["failed"]?.intValue == n)
            #expect(e["retried"]?.intValue == n * Int64(Self.maxAttempts - 1))
            #expect(h.sim.sim.stats().responses[503] == tokens.count * Self.maxAttempts)
            #expect(h.sim.sim.tokenCounts().isEmpty)
            let m = try h.serve.metrics()
            #expect(m.sum("herald_apns_retries_total", Self.pool) == Double(n) * Double(Self.maxAttempts - 1))
            #expect(m.sum("herald_apns_requests_total", Self.pool.merging(["result": "exhausted"]) { $1 }) == Double(n))
            #expect(
                m.sum("herald_apns_requests_total", Self.pool.merging(["result": "exhausted", "reason": "ServiceUnavailable"]) { $1 })
                    == Double(n))
            #expect(m.sum("herald_events_total", ["state": "done"]) == 1)
            #expect(m.sum("herald_fanout_pushes_total", ["result": "failed"]) == Double(n))
            // The backoff draws at least half of each bound: 7.75 s in all.
            #expect(took >= Self.worstBackoff / 2)
        }
    }
}
