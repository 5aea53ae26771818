import Foundation
import HeraldCore
import HeraldSimulator
import HeraldStore
import HeraldTestSupport
import Testing

/// The pruning guard across workers (contract, delivery 10 and "Beyond one machine"): three
/// `herald serve` processes on one PostgreSQL share a channel whose tokens the simulator
/// answers `BadDeviceToken` for an implausible share — but not evenly: shards 0–35 are all
/// invalid, shards 36–47 only 20% (their invalid tokens last in token order). A worker
/// holding shards 36–47 that judged by its own shards (as each did before the guard counted
/// per event) would delete its ~800 invalid ones; counted per event, nobody deletes beyond
/// the bound docs/operations.md states (after a trip is stored, one batch of 256 per other
/// worker).
@Suite(.serialized) struct PostgresWorkersPruneGuardTests {
    /// Tokens: `perLow` per shard in 0..<36 all invalid, `perHigh` per shard in 36..<48 of
    /// which a fifth invalid, those with a first byte of 0xcc or more.
    /// Shards whose tokens are all invalid; the rest (a quarter) only a fifth.
    static let lowShards = Shards.count * 3 / 4

    static func tokens(perLow: Int, perHigh: Int, rate: Double) -> (all: [String], invalid: Set<String>) {
        var count = [Int](repeating: 0, count: Shards.count)
        var badHigh = [Int](repeating: 0, count: Shards.count)
        var all: [String] = []
        var invalid = Set<String>()
        for t in makeTokens(200_000, seed: 10) {
            let bytes = Hex.decode(t)!
            let s = Shards.shard(of: bytes)
            let bad = SimulatorFaults.hashFraction(t, salt: 2) < rate
            if s < Self.lowShards {
                guard bad, count[s] < perLow else { continue }
            } else {
                guard count[s] < perHigh else { continue }
                if bad {
                    guard bytes[0] >= 0xcc, badHigh[s] < perHigh / 5 else { continue }
                    badHigh[s] += 1
                } else if count[s] - badHigh[s] >= perHigh - perHigh / 5 {
                    continue
                }
            }
            count[s] += 1
            all.append(t)
            if bad { invalid.insert(t) }
        }
        return (all, invalid)
    }

    @Test func anImplausibleShareOverEveryShardStopsDeletionsOnEveryWorker() throws {
        let (list, invalid) = Self.tokens(perLow: 167, perHigh: 335, rate: 0.5)
        let high = Shards.count - Self.lowShards
        #expect(list.count == Self.lowShards * 167 + high * 335, "not enough candidate tokens")
        let c = try WorkerCluster(workers: 3, tokens: 0, slow: true, tokenList: list) { $0.faults.badTokenRate = 0.5 }
        let id = try c.publish(on: c.workers[0], score: 1)
        let e = try #require(try c.waitEvent(id, on: c.workers[1], timeout: 90), "the event did not finish")
        #expect(e["state"]?.stringValue == "done", "\(e)")
        let r = try c.workers[2].client.send("GET", "/v1/channels/final", token: WorkerCluster.admin)
        let kept = try #require(r.json?["subscribers"]?["activity"]?.intValue, "\(r.text)")
        let deleted = Int64(list.count) - kept
        var trips = 0.0
        var elsewhere = 0
        for w in c.workers {
            trips += try w.metrics().sum("herald_prune_guard_trips_total")
            elsewhere += w.output.components(separatedBy: "\"fanout.prune_guard_tripped_elsewhere\"").count - 1
        }
        let held = c.workers.map { w in w.output.contains("\"fanout.lease_taken\"") }
        print(
            "workers: prune guard, \(list.count) tokens (\(invalid.count) invalid): \(deleted) deleted, \(trips) trips, "
                + "\(elsewhere) stops on a trip stored by another worker; pruned \(e["pruned"]?.intValue ?? -1), "
                + "failed \(e["failed"]?.intValue ?? -1); workers that took shards: \(held)")
        if deleted > 2 * 256 { c.dump([id]) }
        #expect(deleted <= 2 * 256, "\(deleted) subscriptions deleted under an implausible share")
        #expect(trips == 1, "\(trips) trips counted: the event's trip is reported once")
        #expect(c.workers.contains { $0.output.contains("\"fanout.prune_guard_tripped\"") })
    }
}
