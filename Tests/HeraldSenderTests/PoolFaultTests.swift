import Foundation
import HeraldTestSupport
import Testing

@testable import HeraldAPNS
@testable import HeraldCore
@testable import HeraldNet
@testable import HeraldSender
@testable import HeraldSimulator

@Suite struct PoolFaultTests {
    @Test func goAwayMidBurstLosesNothingAndSendsNothingTwice() throws {
        let fx = try SimFixture { $0.faults.goAwayAfterStreams = 700 }
        let (pool, _) = try fx.pool(connections: 2)
        defer { pool.shutdown() }
        let tokens = makeTokens(10_000, seed: 31)
        let r = send(pool, tokens)
        #expect(r.outcomes().count == tokens.count)
        #expect(r.outcomes().values.allSatisfy { if case .outcome(.delivered, _) = $0 { true } else { false } })
        let counts = fx.sim.tokenCounts()
        #expect(counts.count == tokens.count)
        #expect(counts.values.allSatisfy { $0 == 1 }, "a push was processed twice")
        #expect(fx.sim.stats().connections >= 10 / 2 * 2, "GOAWAY should have cycled connections")
        #expect(fx.metrics.render().contains("herald_apns_goaways_total{pool=\"token\"}"))
    }

    @Test func thePoolReconnectsAfterTheSimulatorRestarts() throws {
        let fx = try SimFixture()
        let (pool, _) = try fx.pool(connections: 2)
        defer { pool.shutdown() }
        let first = send(pool, makeTokens(200, seed: 32))
        #expect(first.outcomes().count == 200)
        try fx.restart()
        let tokens = makeTokens(500, seed: 33)
        let r = send(pool, tokens, timeout: 30)
        #expect(r.outcomes().values.allSatisfy { if case .outcome(.delivered, _) = $0 { true } else { false } })
        #expect(Set(fx.sim.tokenCounts().keys) == Set(tokens))
    }

    @Test func aCrashedPeerMidBurstIsRetriedOnFreshConnections() throws {
        let fx = try SimFixture { $0.faults.latency = 0.05 }
        let (pool, _) = try fx.pool(connections: 2)
        defer { pool.shutdown() }
        let sink = ResultCollector()
        let tokens = makeTokens(3000, seed: 34)
        pool.submit(requests(tokens, tokenTemplate(sink, body: updatePayload(5))))
        while fx.sim.stats().accepted < 500 { usleep(1000) }
        fx.sim.disconnectAll()
        #expect(sink.wait(for: tokens.count, timeout: 60))
        #expect(sink.outcomes().values.allSatisfy { if case .outcome(.delivered, _) = $0 { true } else { false } })
        // At least once: every token is in the ledger; the ones in flight at the crash may be twice.
        #expect(Set(fx.sim.tokenCounts().keys) == Set(tokens))
    }

    @Test func theInFlightLimitFollowsTheSimulatorsCurrentSetting() throws {
        // After an error APNs drops the limit to 1; the pool must follow, then recover.
        let fx = try SimFixture {
            $0.faults.streamsAfterError = 1
            $0.faults.errorRates = [500: 0.05]
        }
        let (pool, _) = try fx.pool(connections: 1) { $0.retry = RetryPolicy(maxAttempts: 30, backoff: Backoff(base: 0.001, cap: 0.005)) }
        defer { pool.shutdown() }
        let tokens = makeTokens(2000, seed: 35)
        let r = send(pool, tokens)
        #expect(r.outcomes().values.allSatisfy { if case .outcome(.delivered, _) = $0 { true } else { false } })
        #expect(Set(fx.sim.tokenCounts().keys) == Set(tokens))
        #expect(fx.metrics.render().contains("herald_apns_settings_changes_total{pool=\"token\"}"))
    }

    @Test func aSlowReaderDelaysButLosesNothing() throws {
        let fx = try SimFixture { $0.faults.slowRead = 0.02 }
        let (pool, _) = try fx.pool(connections: 2)
        defer { pool.shutdown() }
        let tokens = makeTokens(3000, seed: 36)
        let r = send(pool, tokens)
        #expect(r.outcomes().values.allSatisfy { if case .outcome(.delivered, _) = $0 { true } else { false } })
        #expect(fx.sim.tokenCounts().count == tokens.count)
    }
}
