import HeraldAPNS
import HeraldCore
import HeraldNet
import HeraldSender
import Testing

@testable import HeraldFanout
@testable import HeraldStore

/// The pruning guard (rule 10) per event across workers: the decision (`PruneGuard`) on
/// the run's own live answers plus the other shards' stored tally, and a trip stored for
/// the event that stops every other worker. The fake storage plays the other workers'
/// stored tally (`SharedLease.others`).
@Suite struct SchedulerPruneGuardTests {
    static func bad(_ r: APNSRequest) -> APNSResult { .outcome(.dropToken(reason: .badDeviceToken, since: nil), nil) }

    /// Every fifth token (by number) is invalid: 20%.
    static func fifthBad(_ invalid: Set<String>) -> (APNSRequest) -> APNSResult {
        { r in invalid.contains(r.path) ? bad(r) : .outcome(.delivered(apnsID: nil, uniqueID: nil), nil) }
    }

    static func paths(_ list: [[UInt8]]) -> Set<String> { Set(list.map { APNSRequests.tokenPath(Hex.encode($0)) }) }

    @Test func theDecisionSumsTheOtherShardsAndWaitsForEveryShard() {
        func d(_ a: Int64, _ i: Int64, _ o: PruneGuardTally?, final: Bool = false) -> PruneGuard.Verdict {
            PruneGuard.decide(answers: a, invalid: i, others: o, final: final, minSample: 100, ratio: 0.5)
        }
        let all = Shards.count
        // One worker: as before.
        #expect(d(99, 99, nil) == .hold)
        #expect(d(99, 99, nil, final: true) == .trip(share: 1))
        #expect(d(100, 50, nil) == .trip(share: 0.5))
        #expect(d(100, 49, nil) == .prune)
        // Shared: the sum decides, either way.
        #expect(d(1000, 200, PruneGuardTally(answers: 3000, invalid: 3000, startedShards: all, shardCount: all)) == .trip(share: 0.8))
        #expect(d(400, 400, PruneGuardTally(answers: 3600, invalid: 0, startedShards: all, shardCount: all)) == .prune)
        // The sample counts every worker's answers.
        #expect(d(40, 20, PruneGuardTally(answers: 60, invalid: 0, startedShards: all, shardCount: all)) == .prune)
        #expect(d(40, 20, PruneGuardTally(answers: 59, invalid: 0, startedShards: all, shardCount: all)) == .hold)
        // A shard not started yet: held, unless the pass is over.
        #expect(d(5000, 1000, PruneGuardTally(answers: 0, invalid: 0, startedShards: 15, shardCount: all)) == .hold)
        #expect(d(5000, 1000, PruneGuardTally(answers: 0, invalid: 0, startedShards: 15, shardCount: all), final: true) == .prune)
        // A trip by another worker ends it, whatever the counts.
        #expect(d(5000, 0, PruneGuardTally(tripped: true, startedShards: all, shardCount: all)) == .trippedElsewhere)
        #expect(d(5000, 0, PruneGuardTally(tripped: true, startedShards: 0, shardCount: all), final: true) == .trippedElsewhere)
    }

    /// 2,000 tokens on this worker's shards, every fifth answered `BadDeviceToken`, while the
    /// other workers stored 3,000 answers all invalid; settled. `tripStoredFirstElsewhere`:
    /// another worker's trip lands between this one's read of the tally and its record.
    static func fifthInvalidHereAllInvalidElsewhere(tripStoredFirstElsewhere: Bool = false) throws -> (Harness, EventRecord) {
        var shared = FakeStorage.SharedLease(
            validFor: 60, others: PruneGuardTally(answers: 3000, invalid: 3000, startedShards: Shards.count, shardCount: Shards.count))
        shared.tripStoredFirstElsewhere = tripStoredFirstElsewhere
        let h = try Harness(shared: shared)
        try h.channel()
        let all = toks(0..<2000)
        try h.subscribe(all)
        let invalid = all.enumerated().filter { $0.offset % 5 == 0 }.map(\.element)
        h.clock.advance(by: 1)  // APNs answers after the registrations
        let e = try h.publish()
        h.settle(fifthBad(paths(invalid)))
        return (h, e)
    }

    /// This worker's shards answer 20% invalid — alone it would delete them — but the other
    /// workers stored 3,000 answers all invalid: the event's share is implausible, so the
    /// guard trips here, deletes nothing, and stores the trip for the others.
    @Test func theOtherShardsStoredTallyTripsTheGuardHere() throws {
        let (h, e) = try Self.fifthInvalidHereAllInvalidElsewhere()
        #expect(try h.storage.countSubscriptions(channelNum: e.channelNum, kind: .activity) == 2000, "deleted under a tripped guard")
        #expect(h.counter("herald_prune_guard_trips_total") == 1)
        #expect(h.storage.shared?.trips == [e.id])
        #expect(try h.event(e).state == .done)
        #expect(try h.event(e).counters.failed == 400)
        #expect(try h.event(e).counters.answers == 2000 && h.event(e).counters.invalid == 400)
    }

    /// Two workers trip the guard for the same event at once: the other's trip is stored
    /// first, so this one keeps the tokens as before but does not report it (no trip counted,
    /// so no second webhook): the event's trip is reported once.
    @Test func twoWorkersTrippingAtOnceReportTheTripOnce() throws {
        let (h, e) = try Self.fifthInvalidHereAllInvalidElsewhere(tripStoredFirstElsewhere: true)
        #expect(try h.storage.countSubscriptions(channelNum: e.channelNum, kind: .activity) == 2000, "deleted under a tripped guard")
        #expect(h.storage.shared?.trips == [e.id], "the trip was not written")
        #expect(h.counter("herald_prune_guard_trips_total") == 0, "reported by a worker whose write was second")
        #expect(try h.event(e).state == .done && h.event(e).counters.failed == 400)
    }

    /// Every token of this worker's shards is invalid, but the other workers stored 36,000
    /// answers with none invalid: the event's share (10%) is plausible, so they are
    /// deleted (as one machine would), in batches, each after a fresh read of the tally.
    @Test func aPlausibleShareAcrossTheShardsIsPruned() throws {
        let h = try Harness(
            shared: FakeStorage.SharedLease(
                validFor: 60, others: PruneGuardTally(answers: 36000, invalid: 0, startedShards: Shards.count, shardCount: Shards.count)))
        try h.channel()
        try h.subscribe(toks(0..<1000))
        h.clock.advance(by: 1)  // APNs answers after the registrations
        let e = try h.publish()
        h.settle(Self.bad)
        #expect(try h.storage.countSubscriptions(channelNum: e.channelNum, kind: .activity) == 0)
        #expect(try h.event(e).counters.pruned == 1000)
        #expect(h.counter("herald_prune_guard_trips_total") == 0)
        #expect((h.storage.shared?.guardReads ?? 0) >= 1000 / FanoutScheduler.pruneBatch)
    }

    /// Another worker tripped the guard for the event: this one deletes nothing from then
    /// on, and neither counts nor records a trip of its own.
    @Test func aTripStoredByAnotherWorkerStopsTheDeletionsHere() throws {
        let h = try Harness(
            shared: FakeStorage.SharedLease(
                validFor: 60,
                others: PruneGuardTally(answers: 10, invalid: 10, tripped: true, startedShards: Shards.count, shardCount: Shards.count)))
        try h.channel()
        try h.subscribe(toks(0..<1000))
        h.clock.advance(by: 1)  // APNs answers after the registrations
        let e = try h.publish()
        h.settle(Self.bad)
        #expect(try h.storage.countSubscriptions(channelNum: e.channelNum, kind: .activity) == 1000)
        #expect(try h.event(e).counters.failed == 1000)
        #expect(h.counter("herald_prune_guard_trips_total") == 0)
        #expect(h.storage.shared?.trips.isEmpty == true)
    }

    /// Until every shard of the channel has started somewhere, the invalid tokens are held
    /// (a worker far ahead must not judge the event by its own shards); at the end of its
    /// pass it decides on what is known.
    @Test func tokensAreHeldUntilEveryShardHasStarted() throws {
        let h = try Harness(
            shared: FakeStorage.SharedLease(
                validFor: 60, others: PruneGuardTally(answers: 0, invalid: 0, startedShards: 8, shardCount: Shards.count)))
        try h.channel()
        let all = toks(0..<2000)
        try h.subscribe(all)
        let invalid = all.enumerated().filter { $0.offset % 5 == 0 }.map(\.element)
        let outcome = Self.fifthBad(Self.paths(invalid))
        h.clock.advance(by: 1)  // APNs answers after the registrations
        let e = try h.publish()
        var turns = 0
        while (h.storage.shared?.guardReads ?? 0) < 1 && turns < 10_000 {
            h.turn()
            h.tokens.answer(.max, outcome)
            turns += 1
        }
        #expect((h.storage.shared?.guardReads ?? 0) >= 1)
        #expect(try h.storage.countSubscriptions(channelNum: e.channelNum, kind: .activity) == 2000, "deleted before every shard started")
        h.settle(outcome)
        let end = try h.event(e)
        #expect(try h.storage.countSubscriptions(channelNum: e.channelNum, kind: .activity) == 1600, "\(end.counters)")
        #expect(try h.event(e).counters.pruned == 400)
        #expect(h.counter("herald_prune_guard_trips_total") == 0)
    }
}
