import HeraldAPNS
import HeraldCore
import Testing

@testable import HeraldFanout
@testable import HeraldStore

/// The lease and lag gauges: `herald_fanout_leases_held` counts the shards of shared
/// leases held, `herald_fanout_shard_lag_seconds` the age of the oldest event still owed to
/// them (from when it was due), back to 0 once nothing is owed.
@Suite struct SchedulerGaugeTests {
    func gauge(_ h: Harness, _ name: String) -> Double { h.metrics.gauge(name, help: "").value }

    @Test func leasesHeldAndShardLagFollowTheFanOut() throws {
        let h = try Harness(capacity: 4, shared: FakeStorage.SharedLease(shards: ShardSet(0..<8), validFor: 60)) { $0.batchSize = 2 }
        try h.channel()
        try h.subscribe(toks(0..<200))
        #expect(gauge(h, "herald_fanout_leases_held") == 0)
        let e = try h.publish()
        h.turn(2)
        #expect(gauge(h, "herald_fanout_leases_held") == 8)
        // Nothing answered for 3 s: the lag is the event's age.
        h.clock.advance(by: 3)
        h.turn()
        #expect(abs(gauge(h, "herald_fanout_shard_lag_seconds") - 3) < 0.01)
        // A second event waits behind the first: the lag stays the oldest one's.
        _ = try h.publish(.end, score: 2)
        h.clock.advance(by: 1)
        h.turn()
        #expect(abs(gauge(h, "herald_fanout_shard_lag_seconds") - 4) < 0.01)
        h.settle()
        h.clock.advance(by: 1)
        h.turn()
        #expect(try h.event(e).state == .superseded, "the end superseded it")
        #expect(gauge(h, "herald_fanout_shard_lag_seconds") == 0)
        #expect(gauge(h, "herald_fanout_leases_held") == 8, "an idle channel keeps its lease until idleLeaseRelease")
        for _ in 0..<31 {
            h.clock.advance(by: 1)
            h.turn()
        }
        #expect(gauge(h, "herald_fanout_leases_held") == 0)
    }

    /// One worker (SQLite's lease of every shard, for good): no shared leases to count, and
    /// the lag works the same.
    @Test func oneWorkerHasNoLeasesToCountAndTheSameLag() throws {
        let h = try Harness(capacity: 4) { $0.batchSize = 2 }
        try h.channel()
        try h.subscribe(toks(0..<20))
        _ = try h.publish()
        h.turn(2)
        h.clock.advance(by: 2)
        h.turn()
        #expect(gauge(h, "herald_fanout_leases_held") == 0)
        #expect(abs(gauge(h, "herald_fanout_shard_lag_seconds") - 2) < 0.01)
        h.settle()
        h.clock.advance(by: 1)
        h.turn()
        #expect(gauge(h, "herald_fanout_shard_lag_seconds") == 0)
    }
}
