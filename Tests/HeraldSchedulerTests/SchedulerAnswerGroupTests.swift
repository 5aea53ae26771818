import HeraldAPNS
import HeraldCore
import HeraldNet
import HeraldSender
import Testing

@testable import HeraldFanout
@testable import HeraldStore

/// A run's token answers taken from the inbox in a row go to the scheduler as one group
/// (`FanoutScheduler.tokensAnswered`): the outcome must be the one of each answer coming
/// alone, whatever the mix (delivered, unregistered, invalid, exhausted, a refusal that
/// fails the event).
@Suite struct SchedulerAnswerGroupTests {
    /// Token `i`'s answer: every 7th unregistered (410), every 11th invalid (held for the
    /// pruning guard), every 13th exhausted after retries; the rest delivered.
    static func mixed(_ clock: WallClock) -> (APNSRequest) -> APNSResult {
        { r in
            let i = Int(String(r.path.dropFirst("/3/device/".count).prefix(4)), radix: 16) ?? 0
            if i % 7 == 0 { return .outcome(.dropToken(reason: .unregistered, since: clock.nowMillis()), nil) }
            if i % 11 == 0 { return .outcome(.dropToken(reason: .badDeviceToken, since: nil), nil) }
            if i % 13 == 0 { return .exhausted(.retry(reason: .internalServerError, status: 500, after: nil)) }
            return .outcome(.delivered(apnsID: nil, uniqueID: nil), nil)
        }
    }

    struct Outcome: Equatable {
        var state: EventState
        var counters: EventCounters
        var left: Int64
        var pushes: [UInt64]
        var pruned: UInt64
    }

    /// Sends one event to `count` tokens and answers `perTurn` requests before each turn.
    static func send(_ count: Int, perTurn: Int, _ outcome: (WallClock) -> (APNSRequest) -> APNSResult) throws -> Outcome {
        let h = try Harness()
        try h.channel()
        try h.subscribe(toks(0..<count))
        h.clock.advance(by: 1)  // APNs answers after the registrations
        let e = try h.publish()
        let answer = outcome(h.clock)
        for _ in 0..<(count * 4) {
            h.turn()
            if h.tokens.answer(perTurn, attempts: 2, answer) == 0 && h.engine.scheduler.runCount == 0 { break }
        }
        h.settle(answer)
        let record = try h.event(e)
        return Outcome(
            state: record.state, counters: record.counters,
            left: try h.storage.countSubscriptions(channelNum: e.channelNum, kind: .activity),
            pushes: ["sent", "failed", "dead_token", "skipped"].map { h.counter("herald_fanout_pushes_total", ["result": $0]) },
            pruned: h.counter("herald_subscriptions_pruned_total"))
    }

    @Test func aGroupOfMixedAnswersEndsAsTheSameAnswersOneByOne() throws {
        let alone = try Self.send(1200, perTurn: 1, Self.mixed)
        let grouped = try Self.send(1200, perTurn: .max, Self.mixed)
        #expect(grouped == alone)
        // And what they are: 1200 answers, every kind counted once.
        #expect(alone.state == .done)
        #expect(alone.counters.answers == 1200)
        #expect(alone.counters.retried == 1200)
        #expect(alone.counters.pruned > 0 && alone.counters.invalid > 0 && alone.counters.failed > 0)
        #expect(alone.pushes[0] == UInt64(alone.counters.sent))
        #expect(alone.left == 1200 - alone.counters.pruned)
    }

    /// A refusal that fails the event, inside a group: the event stops at that answer (the
    /// rest of the group is still counted, and nothing more is sent), as when it came alone.
    @Test func aFailingAnswerInsideAGroupStopsTheEventAsAlone() throws {
        let refuse: (WallClock) -> (APNSRequest) -> APNSResult = { _ in
            { r in
                r.path.hasSuffix(Hex.encode(tok(3)))
                    ? .outcome(.failEvent(reason: .payloadTooLarge, status: 413), nil)
                    : .outcome(.delivered(apnsID: nil, uniqueID: nil), nil)
            }
        }
        let alone = try Self.send(2000, perTurn: 1, refuse)
        let grouped = try Self.send(2000, perTurn: .max, refuse)
        #expect(alone.state == .failed)
        #expect(grouped.state == .failed)
        #expect(grouped.counters.failed == 1 && alone.counters.failed == 1)
        #expect(grouped.left == 2000 && alone.left == 2000)
    }

    /// The scheduler's own answer to a group: how many it took before actions were needed.
    @Test func theGroupStopsAtTheFirstAnswerThatNeedsActions() throws {
        let h = try Harness()
        try h.channel()
        try h.subscribe(toks(0..<10))
        h.clock.advance(by: 1)
        _ = try h.publish()
        h.turn(3)
        #expect(h.tokens.inFlight == 10)
        let run = try #require(h.engine.scheduler.runs.keys.first)
        let ok = APNSResult.outcome(.delivered(apnsID: nil, uniqueID: nil), nil)
        let fail = APNSResult.outcome(.failEvent(reason: .payloadTooLarge, status: 413), nil)
        let answers = (0..<10).map { TokenAnswer(batch: 0, slot: $0, result: $0 == 4 ? fail : ok, attempts: 1, sentAtMillis: 0) }
        let first = h.engine.scheduler.tokensAnswered(run, answers[0...])
        #expect(first.taken == 5)
        #expect(first.actions.contains { if case .cancel(run) = $0 { true } else { false } })
        let rest = h.engine.scheduler.tokensAnswered(run, answers[5...])
        #expect(rest.taken == 5 && rest.actions.isEmpty)
        #expect(h.engine.scheduler.runs[run]?.counters.answers == 10)
        #expect(h.engine.scheduler.runs[run]?.outstanding == 0)
        // An unknown run takes the whole group and does nothing.
        let none = h.engine.scheduler.tokensAnswered(RunID(999), answers[0...])
        #expect(none.taken == 10 && none.actions.isEmpty)
    }
}
