import Foundation
import HeraldCore
import HeraldStore
import HeraldTestSupport
import Testing

/// What an operator of several workers reads from each worker's `/metrics` (docs/
/// operations.md, "Metrics"): the shard leases it holds and how far behind its shards are.
@Suite(.serialized) struct PostgresWorkersMetricsTests {
    /// Two real workers share a 16,000-token fan-out (about 4 s at 2,000 pushes/s each):
    /// while it runs both hold leases, every shard (`Shards.count`) in all, and the lag grows past a second;
    /// once it is done the lag is back to 0.
    @Test func leasesHeldAndShardLagMoveWithTheFanOut() throws {
        let c = try WorkerCluster(workers: 2, tokens: 16_000, slow: true)
        func sample(_ name: String) throws -> [Double] { try c.workers.map { try $0.metrics().sum(name) } }
        #expect(try sample("herald_fanout_leases_held") == [0, 0])
        #expect(try sample("herald_fanout_shard_lag_seconds") == [0, 0])
        let id = try c.publish(on: c.workers[0], score: 1)
        var held: [Double] = []
        var lag = 0.0
        let seen = try Poll.until(timeout: 60, interval: 0.1) {
            held = try sample("herald_fanout_leases_held")
            lag = max(lag, try sample("herald_fanout_shard_lag_seconds").max() ?? 0)
            return held.allSatisfy { $0 > 0 } && held.reduce(0, +) == Double(Shards.count) && lag >= 1
        }
        print("workers: metrics during the fan-out: leases held \(held), shard lag up to \(lag) s")
        #expect(seen, "leases held \(held), lag \(lag)")
        let e = try #require(try c.waitEvent(id, on: c.workers[1], timeout: 60))
        #expect(e["state"]?.stringValue == "done", "\(e)")
        #expect(
            try Poll.until(timeout: 10, interval: 0.1) { try sample("herald_fanout_shard_lag_seconds") == [0, 0] },
            "the lag stayed after the event was done")
    }
}
