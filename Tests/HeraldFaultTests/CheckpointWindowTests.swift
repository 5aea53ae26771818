import Foundation
import HeraldCore
import HeraldFanout
import HeraldSQL
import HeraldSimulator
import HeraldStore
import HeraldTestSupport
import Testing

/// The duplicate window after a crash (docs/operations.md, "After a crash"): the scheduler
/// never reads more than `maxBatchesPastCheckpoint` batches past the last checkpoint the
/// database committed, so at most that many batches of tokens can get an event again after
/// a crash.
extension FaultTests {
    @Suite struct CheckpointWindow {
        @Test func aStalledDatabaseStopsTheFanOutWithinTheDocumentedWindow() throws {
            let f = try FanoutFixture(connections: 2, simulator: { $0.maxConcurrentStreams = 200 })
            let config = f.engine.config
            let window = config.maxBatchesPastCheckpoint * config.batchSize
            #expect(window == 16_000, "docs/operations.md states 16 000")
            try f.channel("big")
            let tokens = makeTokens(window * 3, seed: 41)
            try f.subscribe("big", tokens)
            f.sim.sim.setFaults(faults { $0.latency = 0.002 })
            let e = try f.publish("big")
            #expect(f.waitAccepted(config.batchSize))

            // The writer stops committing: a write job that waits. Checkpoints queue behind it.
            let release = DispatchSemaphore(value: 0)
            try f.store.db.write({ _ in release.wait() }, completion: { _ in })
            defer { release.signal() }
            // The fan-out runs dry: nothing left in the sender.
            #expect(Poll.until(timeout: 30) { f.pool.pending == 0 })
            let accepted = f.sim.sim.stats().accepted
            // What the database holds: a reader sees the last committed checkpoint.
            let committed = try f.store.event(channelID: "big", eventID: e.id).counters.sent
            print("window: \(accepted) accepted, \(committed) in the last committed checkpoint, window \(window)")
            #expect(accepted < tokens.count, "the fan-out went on with no checkpoint committed")
            #expect(accepted - Int(committed) <= window)

            release.signal()
            let done = try f.waitFinished(e)
            #expect(done.state == .done)
            #expect(f.sim.sim.tokens(thatReceived: done.payload).count == tokens.count)
        }
    }
}
