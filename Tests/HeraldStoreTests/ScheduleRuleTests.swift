import HeraldAPNS
import HeraldCore
import Testing

@testable import HeraldStore

/// The rules of scheduled publishes without a database: `PublishRule.schedule` when posted,
/// `PublishRule.release` when due.
@Suite struct ScheduleRuleTests {
    let nowMs: Int64 = 1_796_000_000_000
    var now: Int64 { nowMs / 1000 }
    let rules = PublishRuleTests()

    func scheduled(_ d: PublishRule.ScheduleDecision) throws -> PublishRule.Scheduled {
        guard case .schedule(let s) = d else { throw PublishRuleTests.Refused() }
        return s
    }

    @Test func aScheduleTakesTheNextSeqAndRendersWithSendAtUnlessTheTimestampIsGiven() throws {
        let ch = rules.channel(lastSeq: 4, lastTimestamp: now - 10)
        let s = try scheduled(
            PublishRule.schedule(channel: ch, event: try rules.event(), sendAt: now + 60, existing: nil, nowMillis: nowMs))
        #expect(s.seq == 5 && s.provisionalTimestamp == now + 60)
        #expect(try JSON.parse(s.payload)["aps"]?["timestamp"] == .int(now + 60))
        let given = try scheduled(
            PublishRule.schedule(channel: ch, event: try rules.event(timestamp: now - 5), sendAt: now + 60, existing: nil, nowMillis: nowMs)
        )
        #expect(given.provisionalTimestamp == now - 5)
        let r = given.record(id: "evt_x", channel: ch, event: try rules.event(), sendAt: now + 60, createdAtMillis: nowMs)
        #expect(r.state == .scheduled && r.sendAt == now + 60 && r.broadcastState == .none)
    }

    @Test func sendAtOutsideTheWindowIsRefusedWithTheLimit() throws {
        let ch = rules.channel()
        let week = PublishRule.maxScheduleAheadSeconds
        for at in [now - 1, now, now + week + 1] {
            #expect(throws: StoreError.sendAtOutOfRange(given: at, now: now, limit: week)) {
                try PublishRule.schedule(channel: ch, event: try rules.event(), sendAt: at, existing: nil, nowMillis: nowMs)
            }
        }
        _ = try scheduled(PublishRule.schedule(channel: ch, event: try rules.event(), sendAt: now + 1, existing: nil, nowMillis: nowMs))
        _ = try scheduled(PublishRule.schedule(channel: ch, event: try rules.event(), sendAt: now + week, existing: nil, nowMillis: nowMs))
        #expect(StoreError.sendAtOutOfRange(given: now, now: now, limit: week).status == 422)
    }

    @Test func aScheduleIsCheckedForWhatCanNeverGoOutButNotForTheLifecycle() throws {
        let ended = rules.channel(lifecycle: .ended, lastTimestamp: now - 10)
        _ = try scheduled(PublishRule.schedule(channel: ended, event: try rules.event(), sendAt: now + 9, existing: nil, nowMillis: nowMs))
        #expect(throws: StoreError.staleTimestamp(given: now - 10, last: now - 10)) {
            try PublishRule.schedule(
                channel: ended, event: try rules.event(timestamp: now - 10), sendAt: now + 9, existing: nil, nowMillis: nowMs)
        }
        #expect(throws: StoreError.futureTimestamp(given: now + 9 + 601, limit: PublishRule.maxTimestampSkew)) {
            try PublishRule.schedule(
                channel: ended, event: try rules.event(timestamp: now + 9 + 601), sendAt: now + 9, existing: nil, nowMillis: nowMs)
        }
        #expect(throws: StoreError.channelClosed("m")) {
            try PublishRule.schedule(
                channel: rules.channel(open: false), event: try rules.event(), sendAt: now + 9, existing: nil, nowMillis: nowMs)
        }
        #expect(throws: StoreError.payloadTooLarge(size: 4134, limit: 4096, broadcast: false)) {
            try PublishRule.schedule(
                channel: rules.channel(), event: try rules.event(pad: 4060), sendAt: now + 9, existing: nil, nowMillis: nowMs)
        }
        let key = PublishRule.KeyedEvent(id: "evt_a", createdAtMillis: nowMs - 1000)
        #expect(
            try PublishRule.schedule(channel: ended, event: try rules.event(), sendAt: now + 9, existing: key, nowMillis: nowMs)
                == .replay(eventID: "evt_a"))
    }

    @Test func aReleaseIsAPublishAtThatTime() throws {
        let ch = rules.channel(lifecycle: .started, lastSeq: 9, lastTimestamp: nowMs / 1000 + 3)
        guard case .send(let a) = PublishRule.release(channel: ch, event: try rules.event(), nowMillis: nowMs) else {
            Issue.record("not sent")
            return
        }
        #expect(a.seq == 10 && a.apsTimestamp == now + 4 && a.becomesCurrent)
        guard case .send(let e) = PublishRule.release(channel: ch, event: try rules.event(.end), nowMillis: nowMs) else {
            Issue.record("end not sent")
            return
        }
        #expect(e.lifecycle == .ended)
    }

    @Test func aReleaseRefusesWhatTheChannelNoLongerTakes() throws {
        var overtaken = rules.channel(lifecycle: .started, lastTimestamp: now)
        overtaken.currentEvent = "evt_live"
        #expect(
            PublishRule.release(channel: overtaken, event: try rules.event(timestamp: now - 1), nowMillis: nowMs)
                == .supersede(by: "evt_live"))
        #expect(
            PublishRule.release(channel: overtaken, event: try rules.event(timestamp: now), nowMillis: nowMs) == .supersede(by: "evt_live"))
        // start and end are never superseded: a stale one fails.
        #expect(
            PublishRule.release(channel: overtaken, event: try rules.event(.end, timestamp: now), nowMillis: nowMs)
                == .fail(reason: "stale_timestamp"))
        #expect(
            PublishRule.release(channel: rules.channel(lifecycle: .ended), event: try rules.event(), nowMillis: nowMs)
                == .fail(reason: "activity_ended"))
        #expect(
            PublishRule.release(channel: rules.channel(open: false), event: try rules.event(), nowMillis: nowMs)
                == .fail(reason: "channel_closed"))
        // A start after an end is what reopens the channel.
        guard case .send = PublishRule.release(channel: rules.channel(lifecycle: .ended), event: try rules.event(.start), nowMillis: nowMs)
        else {
            Issue.record("start refused")
            return
        }
    }
}
