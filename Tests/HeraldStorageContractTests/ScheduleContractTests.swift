import Foundation
import HeraldAPNS
import HeraldCore
import HeraldStore
import Testing

/// Scheduled publishes, the listing, channel changes and expiry (`Schedules`): the same
/// bodies on SQLite and PostgreSQL.
@Suite struct ScheduleContractTests {
    static let t0: Int64 = 1_796_000_000

    func schedule(
        _ f: Fixture, _ kind: LiveActivityEventKind = .update, at sendAt: Int64, timestamp: Int64? = nil, key: String? = nil,
        dryRun: Bool = false, on channel: String = "m"
    ) throws -> PublishResult {
        let e = try f.event(kind, timestamp: timestamp)
        var aps = e.aps
        if let timestamp { aps["timestamp"] = .int(timestamp) }
        let body = JSON.object(["aps": .object(aps)]).encoded()
        return try f.storage.schedule(
            channelID: channel, event: e, body: body, sendAt: sendAt, idempotencyKey: key, dryRun: dryRun)
    }

    @Test(arguments: Backend.allCases) func aScheduledEventIsStoredThenReleasedWithANewSeqAndItsTimestampThen(_ b: Backend) throws {
        let f = try Fixture(b)
        try f.channel()
        let s = try schedule(f, at: Self.t0 + 60).event
        #expect(s.state == .scheduled && s.seq == 1 && s.sendAt == Self.t0 + 60)
        #expect(try f.storage.event(channelID: "m", eventID: s.id) == s)
        #expect(try f.storage.unfinishedEvents().isEmpty, "the fan-out never sees a scheduled event")
        #expect(try f.storage.nextScheduledAt() == Self.t0 + 60)
        #expect(try f.storage.dueScheduled(atOrBefore: Self.t0 + 59, limit: 10).isEmpty)
        let live = try f.publish().event
        #expect(live.seq == 2, "the provisional seq is taken from the channel's counter")
        f.clock.advance(by: 60)
        #expect(try f.storage.dueScheduled(atOrBefore: Self.t0 + 60, limit: 10) == [s.id])
        guard case .sent(let sent, let ch) = try f.storage.release(eventID: s.id) else {
            Issue.record("not sent")
            return
        }
        #expect(sent.state == .queued && sent.seq == 3 && sent.apsTimestamp == Self.t0 + 60 && sent.id == s.id)
        #expect(try JSON.parse(sent.payload)["aps"]?["timestamp"] == .int(Self.t0 + 60))
        #expect(ch.lastSeq == 2, "the channel as the release read it")
        let now = try #require(try f.storage.channel(id: "m"))
        #expect(now.lastSeq == 3 && now.lastTimestamp == Self.t0 + 60 && now.currentEvent == s.id)
        #expect(try f.storage.unfinishedEvents().map(\.id) == [live.id, s.id])
        #expect(try f.storage.release(eventID: s.id) == .notScheduled, "released once")
        #expect(try f.storage.nextScheduledAt() == nil)
    }

    @Test(arguments: Backend.allCases) func sendAtMustBeInTheNextSevenDays(_ b: Backend) throws {
        let f = try Fixture(b)
        try f.channel()
        let week = PublishRule.maxScheduleAheadSeconds
        #expect(throws: StoreError.sendAtOutOfRange(given: Self.t0, now: Self.t0, limit: week)) { try schedule(f, at: Self.t0) }
        #expect(throws: StoreError.sendAtOutOfRange(given: Self.t0 + week + 1, now: Self.t0, limit: week)) {
            try schedule(f, at: Self.t0 + week + 1)
        }
        #expect(try schedule(f, at: Self.t0 + week).event.state == .scheduled)
    }

    @Test(arguments: Backend.allCases) func aDryRunStoresNothingAndAKeyReplaysTheScheduledEvent(_ b: Backend) throws {
        let f = try Fixture(b)
        try f.channel()
        let dry = try schedule(f, at: Self.t0 + 10, dryRun: true)
        #expect(dry.event.state == .scheduled && dry.created)
        #expect(try f.storage.events(channelID: "m", state: nil, beforeSeq: nil, limit: 10).isEmpty)
        let first = try schedule(f, at: Self.t0 + 10, key: "k")
        let again = try schedule(f, at: Self.t0 + 20, key: "k")
        #expect(first.created && !again.created && again.event.id == first.event.id)
    }

    @Test(arguments: Backend.allCases) func aScheduledUpdateOvertakenByANewerLiveOneIsSuperseded(_ b: Backend) throws {
        let f = try Fixture(b)
        try f.channel()
        let s = try schedule(f, at: Self.t0 + 30, timestamp: Self.t0 + 5).event
        let live = try f.publish(timestamp: Self.t0 + 10).event
        f.clock.advance(by: 30)
        guard case .refused(let r) = try f.storage.release(eventID: s.id) else {
            Issue.record("sent")
            return
        }
        #expect(r.state == .superseded && r.supersededBy == live.id)
        #expect(try f.storage.channel(id: "m")?.currentEvent == live.id)
    }

    @Test(arguments: Backend.allCases) func aScheduledUpdateAfterAnEndFailsWithTheReason(_ b: Backend) throws {
        let f = try Fixture(b)
        try f.channel()
        let s = try schedule(f, at: Self.t0 + 30).event
        _ = try f.publish(.end)
        f.clock.advance(by: 30)
        guard case .refused(let r) = try f.storage.release(eventID: s.id) else {
            Issue.record("sent")
            return
        }
        #expect(r.state == .failed && r.failureReason == "activity_ended")
    }

    @Test(arguments: Backend.allCases) func onlyAScheduledEventCanBeCancelledAndACancelledOneIsNeverReleased(_ b: Backend) throws {
        let f = try Fixture(b)
        try f.channel()
        let s = try schedule(f, at: Self.t0 + 30).event
        let live = try f.publish().event
        let c = try f.storage.cancel(channelID: "m", eventID: s.id)
        #expect(c.state == .cancelled && c.finishedAtMillis != nil)
        #expect(throws: StoreError.notScheduled(id: s.id, state: .cancelled)) { try f.storage.cancel(channelID: "m", eventID: s.id) }
        #expect(throws: StoreError.notScheduled(id: live.id, state: .queued)) { try f.storage.cancel(channelID: "m", eventID: live.id) }
        #expect(throws: StoreError.eventNotFound(s.id)) { try f.storage.cancel(channelID: "other", eventID: s.id) }
        f.clock.advance(by: 30)
        #expect(try f.storage.dueScheduled(atOrBefore: Self.t0 + 30, limit: 10).isEmpty)
        #expect(try f.storage.release(eventID: s.id) == .notScheduled)
        let ch = try #require(try f.storage.channel(id: "m"))
        // The cancelled event (seq 1) sits below the queued one (seq 2): nothing is skipped.
        #expect(try f.storage.lastFinishedSeq(channelNum: ch.num) == 1)
    }

    @Test(arguments: Backend.allCases) func aCancelledEventAboveOneStillSendingDoesNotCountAsFinishedBelowIt(_ b: Backend) throws {
        let f = try Fixture(b)
        try f.channel()
        _ = try f.publish().event
        let s = try schedule(f, at: Self.t0 + 30).event
        _ = try f.storage.cancel(channelID: "m", eventID: s.id)
        let ch = try #require(try f.storage.channel(id: "m"))
        #expect(try f.storage.lastFinishedSeq(channelNum: ch.num) == 0, "event 1 is still queued")
    }

    @Test(arguments: Backend.allCases) func theListingIsNewestFirstByStateAndPaginated(_ b: Backend) throws {
        let f = try Fixture(b)
        try f.channel()
        let a = try f.publish().event
        let s = try schedule(f, at: Self.t0 + 30).event
        let c = try f.publish().event
        let all = try f.storage.events(channelID: "m", state: nil, beforeSeq: nil, limit: 10)
        #expect(all.map(\.id) == [c.id, s.id, a.id])
        #expect(try f.storage.events(channelID: "m", state: nil, beforeSeq: nil, limit: 2).map(\.id) == [c.id, s.id])
        #expect(try f.storage.events(channelID: "m", state: nil, beforeSeq: s.seq, limit: 2).map(\.id) == [a.id])
        #expect(try f.storage.events(channelID: "m", state: .scheduled, beforeSeq: nil, limit: 10).map(\.id) == [s.id])
        #expect(throws: StoreError.channelNotFound("x")) { try f.storage.events(channelID: "x", state: nil, beforeSeq: nil, limit: 1) }
    }

    @Test(arguments: Backend.allCases) func aChannelChangeKeepsWhatItDoesNotNameAndExpiringChannelsAreFound(_ b: Backend) throws {
        let f = try Fixture(b)
        try f.channel()
        try f.channel("n")
        var ch = try f.storage.updateChannel(id: "m", ChannelChange(minIntervalMillis: 500))
        #expect(ch.minIntervalMillis == 500 && ch.catchUp && ch.expiresAt == nil)
        ch = try f.storage.updateChannel(id: "m", ChannelChange(catchUp: false, expiresAt: .some(Self.t0 + 100)))
        #expect(!ch.catchUp && ch.minIntervalMillis == 500 && ch.expiresAt == Self.t0 + 100)
        #expect(try f.storage.channel(id: "m")?.expiresAt == Self.t0 + 100)
        _ = try f.storage.updateChannel(id: "n", ChannelChange(expiresAt: .some(Self.t0 + 50)))
        #expect(try f.storage.nextChannelExpiry() == Self.t0 + 50)
        #expect(try f.storage.expiringChannels(atOrBefore: Self.t0 + 60, limit: 10).map(\.id) == ["n"])
        #expect(try f.storage.expiringChannels(atOrBefore: Self.t0 + 100, limit: 10).map(\.id) == ["n", "m"])
        _ = try f.storage.closeChannel(id: "n")
        #expect(try f.storage.nextChannelExpiry() == Self.t0 + 100, "a closed channel does not expire")
        ch = try f.storage.updateChannel(id: "m", ChannelChange(expiresAt: .some(nil)))
        #expect(ch.expiresAt == nil && !ch.catchUp)
        #expect(try f.storage.nextChannelExpiry() == nil)
        #expect(throws: StoreError.channelNotFound("x")) { try f.storage.updateChannel(id: "x", ChannelChange()) }
    }

    @Test(arguments: Backend.allCases) func closingFailsTheScheduledEvents(_ b: Backend) throws {
        let f = try Fixture(b)
        let ch = try f.channel()
        let s = try schedule(f, at: Self.t0 + 30).event
        _ = try f.storage.closeChannel(id: "m")
        #expect(try f.storage.failScheduled(channelNum: ch.num, reason: "channel_closed") == 1)
        let e = try f.storage.event(channelID: "m", eventID: s.id)
        #expect(e.state == .failed && e.failureReason == "channel_closed")
    }

    @Test(arguments: Backend.allCases) func theDutyLockIsHeldByOneWorkerAtATime(_ b: Backend) throws {
        let f = try Fixture(b)
        let one = try f.storage.makeDutyLock()
        #expect(one.hold())
        #expect(one.hold(), "held again by its holder")
        guard b == .postgres else { return }
        let other = try f.secondWorker().makeDutyLock()
        #expect(!other.hold())
        one.release()
        #expect(other.hold())
        other.release()
    }
}

/// A scheduled event that ends without the fan-out (refused when due, failed by its
/// channel's close) still reports `event.finished`, in the transaction that ended it.
@Suite struct ScheduleWebhookReportContractTests {
    static let t0 = ScheduleContractTests.t0

    func reported(_ f: Fixture) throws -> [String] {
        let seen = Locked<[String]>([])
        _ = try f.storage.convertWebhookReports(limit: 10) { reports in
            seen.set(
                reports.compactMap { r in
                    r.type == "event.finished" ? (try? JSON.parse(Array(r.payload.utf8)))?["event_id"]?.stringValue : nil
                })
            return []
        }
        return seen.get()
    }

    @Test(arguments: Backend.allCases) func refusedAndClosedScheduledEventsReportTheirFinish(_ b: Backend) throws {
        let f = try Fixture(b)
        let ch = try f.channel()
        let contract = ScheduleContractTests()
        // No webhook wants it: nothing is recorded.
        let quiet = try contract.schedule(f, at: Self.t0 + 30).event
        _ = try f.publish(.end)
        f.clock.advance(by: 30)
        _ = try f.storage.release(eventID: quiet.id)
        #expect(try f.storage.webhookReportCount() == 0)

        _ = try f.storage.createWebhook(url: "https://a.example/h", events: ["event.finished"], channels: ["*"], sealedSecret: [1])
        let refused = try contract.schedule(f, at: Self.t0 + 60).event
        f.clock.advance(by: 30)
        guard case .refused(let r) = try f.storage.release(eventID: refused.id) else {
            Issue.record("sent")
            return
        }
        #expect(r.state == .failed)
        #expect(try reported(f) == [refused.id])

        let closed = try contract.schedule(f, .start, at: Self.t0 + 600).event
        _ = try f.storage.closeChannel(id: "m")
        #expect(try f.storage.failScheduled(channelNum: ch.num, reason: "channel_closed") == 1)
        #expect(try reported(f) == [closed.id])
    }
}
