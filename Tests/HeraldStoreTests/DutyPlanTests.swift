import HeraldAPNS
import HeraldCore
import Testing

@testable import HeraldStore

/// What runs once per database, decided without I/O.
@Suite struct DutyPlanTests {
    let now: Int64 = 1_796_000_000_000

    func expiring(_ id: String, _ lifecycle: ChannelLifecycle, last: (LiveActivityEventKind, EventState)? = nil, at: Int64? = nil)
        -> DutyPlan.ExpiringChannel
    {
        DutyPlan.ExpiringChannel(id: id, expiresAt: at ?? now / 1000, lifecycle: lifecycle, lastEvent: last)
    }

    @Test func dueEventsAreReleasedInOrderAndTheFirstTurnSweeps() {
        var p = DutyPlan()
        let (a, wake) = p.plan(nowMillis: now, due: ["e1", "e2"], expiring: [], nextSendAt: nil, nextExpiry: nil)
        #expect(a == [.release(eventID: "e1"), .release(eventID: "e2"), .sweepSubscriptions])
        #expect(wake == now + p.pollMillis)
        let (b, _) = p.plan(nowMillis: now + 1000, due: [], expiring: [], nextSendAt: nil, nextExpiry: nil)
        #expect(b.isEmpty, "swept a second ago")
        let (c, _) = p.plan(nowMillis: now + p.sweepIntervalMillis, due: [], expiring: [], nextSendAt: nil, nextExpiry: nil)
        #expect(c == [.sweepSubscriptions])
    }

    @Test func itWakesAtTheNextSendAtOrExpiryAndNeverLaterThanThePoll() {
        var p = DutyPlan(pollMillis: 10_000)
        _ = p.plan(nowMillis: now, due: [], expiring: [], nextSendAt: nil, nextExpiry: nil)
        #expect(p.plan(nowMillis: now, due: [], expiring: [], nextSendAt: now / 1000 + 3, nextExpiry: nil).wakeAtMillis == now + 3000)
        #expect(
            p.plan(nowMillis: now, due: [], expiring: [], nextSendAt: now / 1000 + 30, nextExpiry: now / 1000 + 2).wakeAtMillis == now
                + 2000)
        #expect(p.plan(nowMillis: now, due: [], expiring: [], nextSendAt: now / 1000 + 60, nextExpiry: nil).wakeAtMillis == now + 10_000)
        // A time already come (being handled this turn): look again shortly, not at once.
        #expect(p.plan(nowMillis: now, due: ["e"], expiring: [], nextSendAt: now / 1000, nextExpiry: nil).wakeAtMillis == now + 50)
    }

    @Test func anExpiringChannelIsEndedFirstWhenItsActivityRunsThenClosed() {
        var p = DutyPlan()
        _ = p.plan(nowMillis: now, due: [], expiring: [], nextSendAt: nil, nextExpiry: nil)
        let chans = [
            expiring("running", .started, last: (.update, .done)),
            expiring("idle", .idle),
            expiring("ended", .ended, last: (.end, .done)),
            expiring("ending", .ended, last: (.end, .sending)),
            expiring("late", .ended, last: (.end, .queued), at: (now - p.endGraceMillis) / 1000),
            expiring("endedThenUpdateFailed", .ended, last: (.update, .failed)),
        ]
        let (a, wake) = p.plan(nowMillis: now, due: [], expiring: chans, nextSendAt: nil, nextExpiry: now / 1000)
        #expect(
            a == [
                .endActivity(channelID: "running"), .close(channelID: "idle"), .close(channelID: "ended"), .close(channelID: "late"),
                .close(channelID: "endedThenUpdateFailed"),
            ])
        #expect(wake == now + 50, "an end going out is looked at again soon")
    }

    @Test func aLostLockMakesTheNextHolderSweepAtOnce() {
        var p = DutyPlan()
        _ = p.plan(nowMillis: now, due: [], expiring: [], nextSendAt: nil, nextExpiry: nil)
        p.lockLost()
        #expect(p.plan(nowMillis: now + 10, due: [], expiring: [], nextSendAt: nil, nextExpiry: nil).actions == [.sweepSubscriptions])
    }

    @Test func theExpiryEndCarriesTheCurrentStateAndADismissalIn15Minutes() throws {
        let payload = JSON.object(["aps": ["event": "update", "content-state": ["home": 2], "timestamp": 5]]).encoded()
        let cs = try #require(ExpiryEnd.contentState(payload: payload))
        #expect(cs == ["home": 2])
        let e = try ExpiryEnd.event(contentState: cs, nowSeconds: 1000)
        #expect(e.kind == .end && e.aps["content-state"] == ["home": 2] && e.aps["dismissal-date"] == .int(1000 + 900))
        #expect(try ExpiryEnd.event(contentState: nil, nowSeconds: 1).aps["content-state"] == .object([:]))
        #expect(ExpiryEnd.contentState(payload: Array("not json".utf8)) == nil)
    }
}
