import Foundation
import HeraldTestSupport
import Testing

@testable import HeraldCore
@testable import HeraldSender

/// A template's deadline (a shared lease's local deadline): requests of it not yet written
/// to APNs by then are not written at all, and come back `cancelled`.
@Suite struct TemplateDeadlineTests {
    @Test func requestsNotWrittenByTheDeadlineAreNeverSent() throws {
        let fx = try SimFixture { $0.faults.latency = 0.05 }
        let (pool, _) = try fx.pool(connections: 1) { $0.maxStreamsPerConnection = 10 }
        defer { pool.shutdown() }
        let warm = ResultCollector()
        pool.submit(requests(["aa"], tokenTemplate(warm, body: updatePayload(1))))
        #expect(warm.wait(for: 1))
        // 10 streams of 50 ms: 200 requests take a second; the deadline comes after ~0.15 s.
        let sink = ResultCollector()
        let template = tokenTemplate(sink, body: updatePayload(2))
        template.setDeadline(monotonicNanos: Monotonic.nanos() + 150_000_000)
        let tokens = makeTokens(200, seed: 3)
        pool.submit(requests(tokens, template))
        #expect(sink.wait(for: tokens.count, timeout: 30))
        var delivered = 0
        var cancelled = 0
        for r in sink.outcomes().values {
            if case .outcome(.delivered, _) = r { delivered += 1 }
            if case .cancelled = r { cancelled += 1 }
        }
        #expect(delivered + cancelled == tokens.count)
        #expect(delivered > 0 && cancelled > 100, "delivered \(delivered), cancelled \(cancelled)")
        // What APNs got is exactly what was reported delivered.
        let counts = fx.sim.tokenCounts()
        #expect(tokens.filter { counts[$0] != nil }.count == delivered)
    }

    @Test func aPastDeadlineCancelsAndALaterOneDoesNot() throws {
        let sink = ResultCollector()
        let t = tokenTemplate(sink, body: updatePayload(1))
        #expect(!t.isCancelled)
        t.setDeadline(monotonicNanos: Monotonic.nanos() + 60_000_000_000)
        #expect(!t.isCancelled)
        t.setDeadline(monotonicNanos: Monotonic.nanos() - 1)
        #expect(t.isCancelled)
    }
}
