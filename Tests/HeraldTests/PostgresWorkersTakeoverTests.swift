import Foundation
import HeraldCore
import HeraldStore
import HeraldTestSupport
import Testing

/// A busy survivor takes a killed worker's shards over mid-event (docs/operations.md,
/// "Several workers"): with two workers and 2 s leases, the shards of the one SIGKILLed
/// resume about a lease after the kill, while the survivor's own part is still sending —
/// not once it is done. Measured from the simulator's arrival times.
@Suite(.serialized) struct PostgresWorkersTakeoverTests {
    @Test func aKilledWorkersShardsResumeBeforeTheSurvivorsOwnPartIsDone() throws {
        let n = WorkerCluster.tokenCount("HERALD_TEST_WORKERS_TAKEOVER_TOKENS", default: 40_000)
        let c = try WorkerCluster(workers: 2, tokens: n, slow: true)
        let id = try c.publish(on: c.workers[0], score: 1)
        #expect(try Poll.until(timeout: 60, interval: 0.01) { c.sim.sim.stats().accepted >= n / 8 })
        let victim = c.workers[1]
        victim.kill()
        let killedAt = Date().timeIntervalSince1970
        let line = try #require(victim.output.split(separator: "\n").first { $0.contains("\"fanout.lease_taken\"") })
        let theirs = ShardSet(
            try #require(try JSON.parse(String(line))["shards"]?.stringValue).split(separator: ",").compactMap { Int($0) })
        #expect(!theirs.isEmpty && !theirs.isAll, "\(line)")
        let unreached = c.tokens.filter { theirs.holds(token: Hex.decode($0)!) && c.sim.sim.pushes(to: $0).isEmpty }
        let e = try #require(try c.waitEvent(id, on: c.workers[0], timeout: 120))
        #expect(e["state"]?.stringValue == "done", "\(e)")
        // When the killed worker's shards resumed: the 100th arrival among its tokens it had
        // not reached (a few requests it had written before dying arrive just after).
        let resumedTimes = unreached.compactMap { c.sim.sim.pushes(to: $0).first?.receivedAt }.sorted()
        let resumed = try #require(resumedTimes.count > 100 ? resumedTimes[100] : nil, "\(resumedTimes.count) resumed")
        // When the survivor's own part was done: the last arrival among its shards' tokens.
        let ownDone =
            c.tokens.filter { !theirs.holds(token: Hex.decode($0)!) }.compactMap {
                c.sim.sim.pushes(to: $0).last?.receivedAt
            }.max() ?? 0
        print(
            "workers: takeover mid-event: \(unreached.count) tokens of shards \(theirs) left at the kill; "
                + "resumed \(resumed - killedAt) s after it, the survivor's own part done \(ownDone - killedAt) s after it")
        #expect(resumed < ownDone, "the killed worker's shards waited for the survivor's own part")
        #expect(resumed - killedAt < 15, "resumed \(resumed - killedAt) s after the kill (lease 2 s, poll 1 s)")
        let counts = c.sim.sim.tokenCounts()
        #expect(c.tokens.allSatisfy { counts[$0] != nil })
    }
}
