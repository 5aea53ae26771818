import HeraldAPNS
import HeraldCore
import HeraldNet
import HeraldSender
import Testing

@testable import HeraldFanout
@testable import HeraldStore

/// Fairness, late joiners, the duplicate window, checkpoints, the pruning guard and the
/// channel settings (docs/architecture.md, "The fan-out rules" 6, 7, 9–15).
@Suite struct SchedulerRuleTests {
    /// Rules 6 and 13: a small channel's event goes out while a big one is midway, in the
    /// express lane; the big one's batches do not.
    @Test func aSmallChannelIsNotStuckBehindABigOne() throws {
        let h = try Harness { $0.batchSize = 2 }
        try h.channel("big")
        try h.channel("small")
        try h.subscribe("big", toks(0..<40))
        try h.subscribe("small", toks(100..<101))
        let big = try h.publish("big")
        h.turn()
        let small = try h.publish("small")
        h.turn(2)
        let smallPath = APNSRequests.tokenPath(Hex.encode(tok(100)))
        let log = h.tokens.log
        #expect(log.count <= 8)
        #expect(log.contains { $0.path == smallPath && $0.express })
        #expect(log.filter { $0.path != smallPath }.allSatisfy { !$0.express })
        h.settle()
        #expect(try h.event(big).state == .done)
        #expect(try h.event(small).state == .done)
    }

    /// Rule 7: a late joiner gets the current state at once, in the express lane, and the
    /// channel's next event waits until that catch-up is answered.
    @Test func aLateJoinerGetsTheCurrentStateAndTheNextEventWaitsForIt() throws {
        let h = try Harness()
        try h.channel()
        try h.subscribe(toks(0..<2))
        let u1 = try h.publish(score: 1)
        h.settle()
        try h.join([tok(50)])
        h.turn()
        #expect(h.tokens.paths == [APNSRequests.tokenPath(Hex.encode(tok(50)))])
        #expect(h.tokens.log.last?.express == true)
        let u2 = try h.publish(score: 2)
        h.turn(3)
        #expect(h.tokens.inFlight == 1, "the next event overtook the catch-up")
        h.settle()
        #expect(h.tokens.delivered(tok(50)) == [u1.payload, u2.payload])
        #expect(h.counter("herald_catchup_pushes_total") == 1)
    }

    /// Rule 7: while the channel's next event waits to start, a late joiner gets no
    /// catch-up: the waiting event's pass reaches it.
    @Test func aLateJoinerWaitsForAnEventAlreadyOnItsWay() throws {
        let h = try Harness()
        try h.channel(settings: ChannelSettings(minIntervalMillis: 1_000))
        try h.subscribe(toks(0..<2))
        _ = try h.publish(score: 1)
        h.settle()
        let waiting = try h.publish(score: 2)
        try h.join([tok(50)])
        h.turn(3)
        #expect(h.tokens.inFlight == 0)
        h.clock.advance(by: 1)
        h.settle()
        #expect(h.tokens.delivered(tok(50)) == [waiting.payload])
        #expect(h.counter("herald_catchup_pushes_total") == 0)
    }

    /// Rule 7: past the bound, late joiners are counted and dropped (the next event reaches
    /// them); a channel without catch-up sends none.
    @Test func lateJoinersPastTheBoundAreCountedAndDropped() throws {
        let h = try Harness { $0.maxPendingCatchUps = 3 }
        try h.channel()
        try h.channel("quiet", settings: ChannelSettings(catchUp: false))
        try h.subscribe(toks(0..<1))
        try h.subscribe("quiet", toks(0..<1))
        let u1 = try h.publish(score: 1)
        _ = try h.publish("quiet", score: 1)
        h.settle()
        try h.join(toks(10..<15))
        try h.join("quiet", toks(10..<12))
        h.settle()
        #expect(h.counter("herald_catchup_dropped_total") == 2)
        #expect(toks(10..<15).filter { h.tokens.delivered($0) == [u1.payload] }.count == 3)
        #expect(toks(10..<12).allSatisfy { h.tokens.delivered($0).isEmpty || h.tokens.delivered($0) == [u1.payload] })
        #expect(h.counter("herald_catchup_pushes_total") == 3)
    }

    /// Rule 9: a run reads at most `maxBatchesPastCheckpoint` batches past the last
    /// committed checkpoint; a commit lets it go on; while writes fail, it is not held.
    @Test func theDuplicateWindowHoldsTheScanUntilACheckpointCommits() throws {
        let h = try Harness {
            $0.batchSize = 1
            $0.maxBatchesPastCheckpoint = 4
        }
        try h.channel()
        try h.subscribe(toks(0..<20))
        let e = try h.publish()
        for _ in 0..<10 {
            h.turn(commit: false)
            h.tokens.answer()
        }
        #expect(h.tokens.log.count == 4, "read past the duplicate window")
        h.storage.commit()
        h.turn(3, commit: false)
        #expect(h.tokens.log.count > 4)
        h.storage.failing = true
        for _ in 0..<40 {
            h.turn()
            h.tokens.answer()
        }
        #expect(h.tokens.log.count == 20, "held back while checkpoints cannot be written")
        h.storage.failing = false
        h.clock.advance(by: 1)  // the refused final state is written again at the next interval
        h.settle()
        #expect(try h.event(e).state == .done)
    }

    /// Rule 14: checkpoints are written every `checkpointInterval` (or when half the
    /// window is answered), not per answer.
    @Test func checkpointsFollowTheInterval() throws {
        let h = try Harness {
            $0.batchSize = 1
            $0.checkpointInterval = 10
            $0.maxBatchesPastCheckpoint = 32
        }
        try h.channel()
        try h.subscribe(toks(0..<10))
        let e = try h.publish()
        for _ in 0..<8 {
            h.turn()
            h.tokens.answer()
        }
        h.turn()
        #expect(h.storage.checkpointsWritten.count == 1)
        h.clock.advance(by: 10)
        h.turn()
        #expect(h.storage.checkpointsWritten.count == 2)
        #expect(h.storage.checkpointsWritten.last?.1 == tok(7))
        #expect(try h.event(e).cursor == tok(7))
    }

    /// Rule 15: a superseded run writes no checkpoint after it stopped (its cancelled
    /// requests complete batches that never reached their tokens).
    @Test func aStoppedRunWritesNoCheckpoint() throws {
        let h = try Harness {
            $0.batchSize = 1
            $0.checkpointInterval = 10
        }
        try h.channel()
        try h.subscribe(toks(0..<10))
        let u1 = try h.publish(score: 1)
        h.turn(4)
        h.tokens.answer(1)
        h.turn()
        let written = h.storage.checkpointsWritten.count
        #expect(written == 1)
        _ = try h.publish(score: 2)
        h.turn()
        h.clock.advance(by: 20)
        h.tokens.answer()  // cancelled
        h.turn(3)
        #expect(h.storage.checkpointsWritten.filter { $0.0 == u1.id }.count == written)
        h.settle()
        #expect(try h.event(u1).state == .superseded)
        #expect(try h.event(u1).cursor == tok(0))
    }

    /// Rule 10: when half of an event's answers call tokens invalid, nothing is deleted and
    /// the guard trips once; a few bad tokens are deleted.
    @Test func thePruningGuardKeepsSubscriptionsWhenMostTokensAreInvalid() throws {
        let h = try Harness()
        try h.channel()
        try h.channel("b")
        try h.subscribe(toks(0..<200))
        try h.subscribe("b", toks(0..<200))
        let bad: (APNSRequest) -> APNSResult = { _ in .outcome(.dropToken(reason: .badDeviceToken, since: nil), nil) }
        h.clock.advance(by: 1)
        let e = try h.publish()
        h.settle(bad)
        #expect(h.counter("herald_prune_guard_trips_total") == 1)
        #expect(try h.storage.countSubscriptions(channelNum: 1, kind: .activity) == 200)
        #expect(try h.event(e).counters.failed == 200)
        let few = Set(toks(0..<3).map { APNSRequests.tokenPath(Hex.encode($0)) })
        let some: (APNSRequest) -> APNSResult = { r in
            few.contains(r.path) ? bad(r) : .outcome(.delivered(apnsID: nil, uniqueID: nil), nil)
        }
        let e2 = try h.publish("b")
        h.settle(some)
        #expect(h.counter("herald_prune_guard_trips_total") == 1)
        #expect(try h.storage.countSubscriptions(channelNum: 2, kind: .activity) == 197)
        #expect(try h.event(e2).counters.pruned == 3)
    }

    /// Rule 10 (410): a token re-registered after APNs' timestamp survives.
    @Test func anUnregisteredTokenIsPrunedUnlessRegisteredAgainAfterIt() throws {
        let h = try Harness()
        try h.channel()
        try h.subscribe(toks(0..<2))
        let then = h.clock.nowMillis()
        h.clock.advance(by: 5)
        try h.subscribe(toks(1..<2))  // registered again after APNs' timestamp
        let gone: (APNSRequest) -> APNSResult = { _ in .outcome(.dropToken(reason: .unregistered, since: then + 1), nil) }
        let e = try h.publish()
        h.settle(gone)
        #expect(try h.storage.countSubscriptions(channelNum: 1, kind: .activity) == 1)
        #expect(try h.event(e).counters.pruned == 1)
        #expect(try h.event(e).counters.failed == 1)
    }

    /// Rule 11: an update starts no sooner than `min_interval_ms` after the previous one.
    @Test func theMinimumIntervalHoldsTheNextUpdate() throws {
        let h = try Harness()
        try h.channel(settings: ChannelSettings(minIntervalMillis: 2_000))
        try h.subscribe(toks(0..<2))
        _ = try h.publish(score: 1)
        h.settle()
        let u2 = try h.publish(score: 2)
        h.turn(5)
        #expect(h.tokens.log.count == 2)
        h.clock.advance(by: 1.9)
        h.turn(2)
        #expect(h.tokens.log.count == 2)
        h.clock.advance(by: 0.1)
        h.settle()
        #expect(h.tokens.log.count == 4)
        #expect(try h.event(u2).state == .done)
    }

    /// Rule 12: past the channel's priority-10 budget per hour, events go at priority 5.
    @Test func thePriority10BudgetDowngradesToFive() throws {
        let h = try Harness()
        try h.channel(settings: ChannelSettings(priority10BudgetPerHour: 1))
        try h.subscribe(toks(0..<1))
        _ = try h.publish(score: 1, alert: true)
        h.settle()
        let second = try h.publish(score: 2, alert: true)
        h.settle()
        #expect(h.tokens.log.map(\.priority) == ["10", "5"])
        #expect(h.counter("herald_priority_downgrades_total") == 1)
        #expect(try h.event(second).priority == 5)
        h.clock.advance(by: 3601)
        _ = try h.publish(score: 3, alert: true)
        h.settle()
        #expect(h.tokens.log.last?.priority == "10")
    }

    /// A failEvent answer stops the event with the reason; a broadcast channel sends one
    /// request and records its state.
    @Test func aRefusedPushFailsTheEventAndABroadcastIsRecorded() throws {
        let h = try Harness()
        try h.channel()
        try h.channel("b", mode: .broadcast)
        try h.subscribe(toks(0..<3))
        let e = try h.publish()
        h.settle { _ in .outcome(.failEvent(reason: .badRequestPayload, status: 400), nil) }
        let failed = try h.event(e)
        #expect(failed.state == .failed)
        #expect(failed.failureReason?.contains("BadRequestPayload") == true || failed.failureReason?.contains("badRequestPayload") == true)
        let b = try h.publish("b")
        h.settle()
        #expect(try h.event(b).broadcastState == .sent)
        #expect(try h.event(b).state == .done)
        #expect(h.broadcast.delivered(path: APNSRequests.broadcastPath(bundleID: "com.example.app")) == [b.payload])
    }
}

/// A failed scan is retried after a backoff that grows with each failure in a row, and the
/// run goes on from where it was once a scan succeeds.
@Suite struct SchedulerScanRetryTests {
    @Test func aFailingScanBacksOffAndTheRunFinishesOnceItSucceeds() throws {
        let h = try Harness { $0.batchSize = 10 }
        try h.channel()
        try h.subscribe(toks(0..<50))
        h.storage.scanOutage.withLock { $0 = true }
        let e = try h.publish()
        h.turn(20)
        #expect(h.storage.scans.withLock { $0 } == 1, "rescanned without waiting")
        // 0.05 s after the first failure, then 0.1, 0.2, 0.4 … capped at 2 s.
        var attempts: [Int] = []
        for _ in 0..<80 {
            h.clock.advance(by: 0.05)
            h.turn()
            attempts.append(h.storage.scans.withLock { $0 })
        }
        let scans = h.storage.scans.withLock { $0 }
        // 4 s of outage: 1 + retries at 0.05, 0.15, 0.35, 0.75, 1.55, 3.15 s.
        #expect(scans == 7, "\(scans) scans in 4 s: \(attempts)")
        #expect(h.tokens.log.isEmpty)
        h.storage.scanOutage.withLock { $0 = false }
        h.clock.advance(by: 2)
        h.settle()
        #expect(try h.event(e).state == .done)
        #expect(h.tokens.log.count == 50)
    }
}
