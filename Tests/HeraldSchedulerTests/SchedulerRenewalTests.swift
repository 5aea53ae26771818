import HeraldAPNS
import HeraldCore
import Testing

@testable import HeraldFanout
@testable import HeraldStore

/// Renewals go in one call per tick for every channel due (and those half-way to it, so
/// channels taken at different times fall into step), not one per channel.
@Suite struct SchedulerRenewalTests {
    @Test func channelsTakenAtDifferentTimesAreRenewedTogether() throws {
        let h = try Harness(capacity: 1, shared: FakeStorage.SharedLease(validFor: 3)) { $0.batchSize = 1 }
        try h.channel("a")
        try h.channel("b")
        try h.subscribe("a", toks(0..<50))
        try h.subscribe("b", toks(0..<50))
        _ = try h.publish("a")
        h.turn()
        h.clock.advance(by: 0.6)
        _ = try h.publish("b")
        h.turn()
        // Channel a is due at 1 s (a third of 3 s), b (taken 0.6 s later) at 1.6 s: a, past
        // half of its interval then, goes along, and from then on they renew together.
        for _ in 0..<60 {
            h.clock.advance(by: 0.1)
            h.turn()
        }
        let l = try #require(h.storage.shared)
        #expect(l.renewals >= 2 * 5, "\(l.renewals) channel renewals")
        // In step after the first renewal of b (at most one call for one channel before).
        #expect(l.renewalCalls >= 1 && l.renewalCalls <= l.renewals / 2 + 1, "\(l.renewalCalls) calls for \(l.renewals) channel renewals")
    }
}
