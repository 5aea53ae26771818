import HeraldAPNS
import HeraldCore
import HeraldNet
import HeraldSender
import Testing

@testable import HeraldFanout
@testable import HeraldStore

/// Taking over shards mid-event: a worker busy sending an event claims shards freed since
/// (a dead worker's) at its poll and resumes them at once beside its own run, not once its
/// own part is done; the next event waits for both.
@Suite struct SchedulerTakeoverTests {
    @Test func freedShardsAreResumedWhileTheWorkersOwnPartIsStillSending() throws {
        let mine = ShardSet(0..<8)
        let h = try Harness(capacity: 4, shared: FakeStorage.SharedLease(shards: mine, validFor: 60)) { $0.batchSize = 2 }
        try h.channel()
        let all = toks(0..<200)
        try h.subscribe(all)
        let e = try h.publish(score: 1)
        for _ in 0..<5 {
            h.turn()
            h.tokens.answer(2)
        }
        // The other worker's shards are free now (its lease lapsed); the next poll takes them.
        h.storage.shared?.shards = .all
        h.storage.shared?.fresh = ShardSet(8..<Shards.count)
        h.clock.advance(by: 1)
        var firstOther: Int?
        var ownLeftThen = 0
        for step in 0..<2_000 {
            h.turn()
            h.tokens.answer(2)
            if firstOther == nil, all.contains(where: { !mine.holds(token: $0) && !h.tokens.delivered($0).isEmpty }) {
                firstOther = step
                ownLeftThen = all.filter { mine.holds(token: $0) && h.tokens.delivered($0).isEmpty }.count
            }
            if h.engine.scheduler.runCount == 0 { break }
        }
        #expect(firstOther != nil, "the freed shards were never sent")
        #expect(ownLeftThen > 0, "the freed shards waited for this worker's own part")
        // A second event waits for both runs of the first.
        let e2 = try h.publish(score: 2)
        h.settle()
        #expect(try h.event(e).state == .done && h.event(e2).state == .done)
        for t in all {
            let got = h.tokens.delivered(t).map { String(decoding: $0, as: UTF8.self) }
            #expect(got.count == 2 && got[0].contains("\"score\":1") && got[1].contains("\"score\":2"), "\(got)")
        }
        #expect(h.counter("herald_fanout_lease_takeovers_total") == 1)
    }
}
