import HeraldStore
import Testing

@testable import HeraldFanout

/// A run's targets are counted in the background when it starts (`targetsCounted`). A run
/// superseded before that count is back must not finish without it: its `skipped` is its
/// targets not reached. Finished early, its targets were what it had sent and `skipped` 0
/// (seen under load in `FanoutDeliveryTests`: sent 201, skipped 0 of 2,000).
@Suite struct SchedulerTargetCountTests {
    @Test func aSupersededRunWaitsForItsCountThenRecordsWhatItSkipped() throws {
        let h = try Harness(capacity: 4) { $0.batchSize = 2 }
        h.holdBackground = true
        try h.channel()
        try h.subscribe(toks(0..<10))
        let u1 = try h.publish(score: 1)
        h.turn(3)  // batches 0 and 1 out; batch 2 refused (the sender is full)
        h.tokens.answer()
        h.turn()  // batch 2 goes out
        let u2 = try h.publish(score: 2)
        h.turn()  // u1 superseded: batch 2 cancelled
        // Everything of u1 answered, but its count held: it stays draining, and u2 (per-token
        // order) does not start.
        #expect(h.settle(maxTurns: 200) == 200)
        #expect(try h.event(u1).state == .sending)
        #expect(try h.event(u2).state == .queued)
        #expect(h.tokens.inFlight == 0)
        #expect(toks(0..<10).allSatisfy { h.tokens.delivered($0).count <= 1 }, "u2 sent before u1 finished")

        h.holdBackground = false
        h.settle()
        let e1 = try h.event(u1)
        #expect(e1.state == .superseded && e1.supersededBy == u2.id)
        #expect(e1.counters.targets == 10)
        #expect(e1.counters.sent == 4, "\(e1.counters)")
        #expect(e1.counters.skipped == 6, "\(e1.counters)")
        let e2 = try h.event(u2)
        #expect(e2.state == .done)
        #expect(e2.counters.sent == 10)
        for t in toks(0..<10) { #expect(h.tokens.delivered(t).last == u2.payload) }
    }
}
