import Foundation
import HeraldAPNS
import HeraldCore
import HeraldStore
import Testing

/// Publishing, progress and final states: the same bodies on SQLite and PostgreSQL.
@Suite struct EventLogContractTests {
    @Test(arguments: Backend.allCases) func timestampsAndSeqStrictlyIncreaseAndStaleOrFutureOnesAreRefused(_ b: Backend) throws {
        let f = try Fixture(b)
        try f.channel()
        let a = try f.publish().event
        #expect(a.apsTimestamp == 1_796_000_000 && a.seq == 1 && a.state == .queued)
        let b2 = try f.publish().event
        #expect(b2.apsTimestamp == a.apsTimestamp + 1 && b2.seq == 2)
        #expect(try JSON.parse(b2.payload)["aps"]?["timestamp"] == .int(b2.apsTimestamp))
        #expect(throws: StoreError.staleTimestamp(given: b2.apsTimestamp, last: b2.apsTimestamp)) {
            try f.publish(timestamp: b2.apsTimestamp)
        }
        #expect(throws: StoreError.futureTimestamp(given: 1_796_000_000 + 3600, limit: PublishRule.maxTimestampSkew)) {
            try f.publish(timestamp: 1_796_000_000 + 3600)
        }
        let c = try f.publish(timestamp: b2.apsTimestamp + 100).event
        #expect(c.apsTimestamp == b2.apsTimestamp + 100)
        let ch = try #require(try f.storage.channel(id: "m"))
        #expect(ch.lastSeq == 3 && ch.lastTimestamp == c.apsTimestamp && ch.currentEvent == c.id)
        #expect(try f.storage.lastEvent(channelNum: ch.num) == c)
        #expect(try f.storage.event(channelID: "m", eventID: a.id) == a)
        #expect(throws: StoreError.eventNotFound(a.id)) { try f.storage.event(channelID: "other", eventID: a.id) }
        #expect(try f.storage.event(id: "evt_none") == nil)
        #expect(throws: StoreError.channelNotFound("x")) { try f.publish(on: "x") }
    }

    @Test(arguments: Backend.allCases) func afterAnEndUpdatesWaitForANewStart(_ b: Backend) throws {
        let f = try Fixture(b)
        try f.channel()
        _ = try f.publish(.end)
        #expect(try f.storage.channel(id: "m")?.lifecycle == .ended)
        #expect(throws: StoreError.activityEnded("m")) { try f.publish(.update) }
        let start = try f.publish(.start).event
        let ch = try #require(try f.storage.channel(id: "m"))
        #expect(ch.lifecycle == .started && ch.currentEvent == nil && start.kind == .start)
        _ = try f.publish(.update)
    }

    @Test(arguments: Backend.allCases) func anIdempotencyKeyReplaysForADayThenMakesANewEvent(_ b: Backend) throws {
        let f = try Fixture(b)
        try f.channel()
        try f.channel("n")
        let first = try f.publish(key: "k1")
        #expect(first.created)
        f.clock.advance(by: 3600)
        let again = try f.publish(key: "k1")
        #expect(!again.created && again.event.id == first.event.id)
        // Keys are per channel.
        #expect(try f.publish(on: "n", key: "k1").created)
        f.clock.advance(by: 24 * 3600)
        let later = try f.publish(key: "k1")
        #expect(later.created && later.event.id != first.event.id)
        #expect(try f.publish(key: "k1").event.id == later.event.id)
    }

    @Test(arguments: Backend.allCases) func payloadLimitsAndDryRuns(_ b: Backend) throws {
        let f = try Fixture(b)
        let ch = try f.channel()
        try f.channel("bc", mode: .broadcast)
        #expect(throws: StoreError.self) { try f.publish(pad: 4200) }
        do {
            _ = try f.publish(pad: 4200)
        } catch let e as StoreError {
            guard case .payloadTooLarge(_, 4096, false) = e else { throw e }
        }
        // Broadcast-only: 5120.
        _ = try f.publish(on: "bc", pad: 4200)
        _ = try f.storage.register(channelID: "m", token: tokens(1)[0], kind: .activity, replaces: nil, expiresAt: nil)
        let dry = try f.publish(dryRun: true)
        #expect(dry.targets == 1 && dry.limit == 4096 && dry.created)
        #expect(try f.storage.lastEvent(channelNum: ch.num) == nil)
        #expect(try f.storage.channel(id: "m")?.lastSeq == 0)
    }

    @Test(arguments: Backend.allCases) func checkpointsAndFinishRecordProgressAndFinalStates(_ b: Backend) throws {
        let f = try Fixture(b)
        let ch = try f.channel()
        let e1 = try f.publish().event
        let e2 = try f.publish().event
        let e3 = try f.publish().event
        #expect(try f.storage.unfinishedEvents().map(\.id) == [e1.id, e2.id, e3.id])
        #expect(try f.storage.unfinishedEvents(channelNum: ch.num, afterSeq: 1, throughSeq: 2).map(\.id) == [e2.id])
        #expect(try f.storage.lastFinishedSeq(channelNum: ch.num) == 0)
        let lease = try #require(try f.storage.acquireLease(channelNum: ch.num))
        #expect(lease.shards.isAll && lease.channelNum == ch.num)

        let start: [UInt8] = [0x10]
        try waitFor {
            f.storage.markSending(eventID: e1.id, shards: lease.shards, targets: 40, passStart: start, priority: 5, completion: $0)
        }
        var r = try #require(try f.storage.event(id: e1.id))
        #expect(r.state == .sending && r.counters.targets == 40 && r.passStart == start && r.cursor == start && !r.wrapped)
        #expect(r.priority == 5 && r.startedAtMillis == f.clock.nowMillis())

        var counters = EventCounters()
        counters.targets = 40
        counters.sent = 30
        counters.failed = 2
        counters.pruned = 1
        counters.retried = 3
        try waitFor {
            f.storage.checkpoint(eventID: e1.id, shards: lease.shards, cursor: [0x05], wrapped: true, counters: counters, completion: $0)
        }
        r = try #require(try f.storage.event(id: e1.id))
        #expect(r.cursor == [0x05] && r.wrapped && r.counters.sent == 30 && r.counters.failed == 2 && r.counters.pruned == 1)
        #expect(r.counters.retried == 3 && r.counters.targets == 40)

        counters.sent = 37
        f.clock.advance(by: 2)
        try waitFor {
            f.storage.finishEvent(
                eventID: e1.id, shards: lease.shards, state: .done, counters: counters, reason: nil, supersededBy: nil, completion: $0)
        }
        r = try #require(try f.storage.event(id: e1.id))
        #expect(r.state == .done && r.counters.sent == 37 && r.finishedAtMillis == f.clock.nowMillis())
        // A finished event stays as it is.
        try waitFor {
            f.storage.checkpoint(
                eventID: e1.id, shards: lease.shards, cursor: [0x09], wrapped: false, counters: EventCounters(), completion: $0)
        }
        try f.storage.finishEvent(
            eventID: e1.id, shards: lease.shards, state: .failed, counters: EventCounters(), reason: "x", supersededBy: nil)
        #expect(try f.storage.event(id: e1.id) == r)

        try f.storage.finishEvent(
            eventID: e2.id, shards: lease.shards, state: .superseded, counters: EventCounters(), reason: nil, supersededBy: e3.id)
        let s = try #require(try f.storage.event(id: e2.id))
        #expect(s.state == .superseded && s.supersededBy == e3.id)
        #expect(try f.storage.lastFinishedSeq(channelNum: ch.num) == 2)
        #expect(try f.storage.unfinishedEvents().map(\.id) == [e3.id])

        try f.storage.setBroadcastState(eventID: e3.id, state: .failed, reason: "BadChannelId")
        #expect(try f.storage.event(id: e3.id)?.broadcastState == .failed)
        #expect(try f.storage.event(id: e3.id)?.broadcastReason == "BadChannelId")

        // The sweep keeps the channel's current event and unfinished ones.
        f.clock.advance(by: 3600)
        #expect(try f.storage.sweepEvents(olderThanMillis: 60_000) == 2)
        #expect(try f.storage.event(id: e1.id) == nil)
        #expect(try f.storage.event(id: e3.id) != nil)
        f.storage.releaseLease(lease)
    }
}
