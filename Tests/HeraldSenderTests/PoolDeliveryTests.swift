import Foundation
import HeraldTestSupport
import Testing

@testable import HeraldAPNS
@testable import HeraldCore
@testable import HeraldNet
@testable import HeraldSender
@testable import HeraldSimulator

@Suite struct PoolDeliveryTests {
    @Test func aHundredThousandPushesThroughFourConnectionsMatchTheLedgerExactly() throws {
        let fx = try SimFixture()
        let (pool, _) = try fx.pool(connections: 4)
        defer { pool.shutdown() }
        let sink = ResultCollector()
        let body = updatePayload(1_767_225_600)
        let tokens = makeTokens(100_000)
        let template = tokenTemplate(sink, body: body)
        let reqs = requests(tokens, template)
        let start = Date()
        for chunk in stride(from: 0, to: reqs.count, by: 1000) {
            pool.submit(Array(reqs[chunk..<min(chunk + 1000, reqs.count)]))
        }
        #expect(sink.wait(for: tokens.count, timeout: 120))
        let elapsed = Date().timeIntervalSince(start)
        print("pool: 100k pushes in \(String(format: "%.2f", elapsed)) s (\(Int(Double(tokens.count) / elapsed))/s)")
        let results = sink.outcomes()
        let delivered = results.values.filter { if case .outcome(.delivered, _) = $0 { return true } else { return false } }.count
        #expect(delivered == tokens.count)
        // The ledger holds each token exactly once, with exactly the event's bytes.
        let counts = fx.sim.tokenCounts()
        #expect(counts.count == tokens.count)
        #expect(counts.values.allSatisfy { $0 == 1 })
        let reached = fx.sim.tokens(thatReceived: body) == Set(tokens)
        #expect(reached, "not every subscriber got the event")
        #expect(fx.sim.stats().openConnections == 4)
    }

    @Test func anExpressRequestGoesAheadOfTheBulkQueuedBeforeItAndPastTheLimit() throws {
        let fx = try SimFixture { $0.faults.latency = 0.02 }
        let (pool, _) = try fx.pool(connections: 1) {
            $0.maxStreamsPerConnection = 10
            $0.maxPending = 200
        }
        defer { pool.shutdown() }
        let warm = ResultCollector()
        pool.submit(requests(["aa"], tokenTemplate(warm, body: updatePayload(1))))
        #expect(warm.wait(for: 1))
        // 230 bulk requests: 10 streams of 20 ms each take ~0.5 s to clear them.
        let bulk = ResultCollector()
        pool.submit(requests(makeTokens(230), tokenTemplate(bulk, body: updatePayload(2))))
        // Full for ordinary requests (230 pending, limit 200), not for express ones (250).
        let late = ResultCollector()
        #expect(!pool.trySubmit(requests(makeTokens(1, seed: 8), tokenTemplate(late, body: updatePayload(3)))))
        let express = ResultCollector()
        let r = requests(makeTokens(1, seed: 9), tokenTemplate(express, body: updatePayload(4)))
        r[0].express = true
        #expect(pool.trySubmit(r))
        #expect(express.wait(for: 1, timeout: 10))
        let bulkBefore = bulk.outcomes().count
        #expect(bulkBefore < 60, "\(bulkBefore) of 230 bulk requests were answered before the express one")
        #expect(bulk.wait(for: 230))
        #expect(fx.sim.tokenCounts().count == 232)
    }

    @Test func oneConnectionKeepsAThousandStreamsInFlight() throws {
        let fx = try SimFixture { $0.faults.latency = 0.2 }
        let (pool, _) = try fx.pool(connections: 1)
        defer { pool.shutdown() }
        let sink = ResultCollector()
        // Warm up: the first request lifts the simulator's one-stream limit (JWT seen).
        let first = tokenTemplate(sink, body: updatePayload(1))
        pool.submit(requests(["aa"], first))
        #expect(sink.wait(for: 1))
        let sink2 = ResultCollector()
        let reqs = requests(makeTokens(1000), tokenTemplate(sink2, body: updatePayload(2)))
        let start = Date()
        pool.submit(reqs)
        #expect(sink2.wait(for: 1000))
        // With 200 ms per answer, 1000 requests finish in about one round trip only if
        // they were all in flight at once on the one connection.
        let elapsed = Date().timeIntervalSince(start)
        #expect(elapsed < 1.5, "took \(elapsed)s: streams were not concurrent")
        #expect(fx.sim.stats().connections == 1)
    }

    @Test func templatesShareTheirEncodedBody() throws {
        let sink = ResultCollector()
        let t = tokenTemplate(sink, body: updatePayload(3))
        let rs = requests(makeTokens(3), t)
        #expect(rs.allSatisfy { $0.template.body === t.body })
    }
}
