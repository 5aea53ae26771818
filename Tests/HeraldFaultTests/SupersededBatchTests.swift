import Foundation
import HeraldCore
import HeraldFanout
import HeraldSender
import HeraldSimulator
import HeraldStore
import HeraldTestSupport
import Testing

/// A stream of updates that supersede each other while the APNs pool is full: each
/// superseded event leaves behind the batch the pool had no room for. Its requests must be
/// freed with it (they point back at the batch; the pair leaked ~500 requests per
/// superseded event, found by Benchmarks/soak.sh as heap growing 500 B per publish).
extension FaultTests {
    @Suite struct SupersededBatches {
        @Test func aSupersededEventFreesTheBatchThePoolHadNoRoomFor() throws {
            let supersedes = 100
            let f = try FanoutFixture(
                connections: 1, pool: { $0.maxPending = 600 }, simulator: { $0.faults.latency = 0.01 })
            try f.channel("churn")
            try f.subscribe("churn", makeTokens(20_000, seed: 1_101))
            var last = try f.publish("churn", state: ["score": 0])
            for i in 1...supersedes {
                // The event is being sent (the pool is full: its next batch waits), then a
                // newer update supersedes it.
                let e = last
                #expect(
                    Poll.until(timeout: 30, interval: 0.001) { (try? f.store.event(channelID: "churn", eventID: e.id).state) != .queued })
                last = try f.publish("churn", state: ["score": .int(Int64(i))])
            }
            let done = try f.waitFinished(last)
            #expect(done.state == .done)
            #expect(Poll.until(timeout: 30) { f.pool.pending == 0 })
            // Every request is answered and the events are finished: none should be alive
            // but those of tests running beside this one (APNSRequest.live is per process).
            // A leak here is ~500 per superseded event: 50 000.
            let live = APNSRequest.live
            print("superseded: \(supersedes) supersedes, \(live) requests alive after")
            #expect(live < 25_000)
        }
    }
}
