import Foundation
import HeraldCore
import HeraldPostgresStore
import HeraldStore
import HeraldTestSupport
import Testing

/// The pruning guard's tally across workers on PostgreSQL: each holding's answers and
/// invalid answers are stored by its fenced checkpoints and final states, another worker
/// reads the sum over the other shards, and a trip is seen by all.
@Suite struct PruneGuardTallyTests {
    @Test func theOtherShardsTallyIsTheirFencedCheckpointsAndATripIsSeenByAll() throws {
        let f = try Fixture(.postgres)
        let ch = try f.channel()
        let e = try f.publish().event
        let (other, mine, upper) = try f.splitLease(ch)
        // Nothing started yet.
        var t = try #require(try f.storage.pruneGuardTally(eventID: e.id, excluding: mine))
        #expect(t == PruneGuardTally(startedShards: 0, shardCount: Shards.count))

        try waitFor { f.storage.markSending(eventID: e.id, shards: mine, targets: 10, passStart: [], priority: 10, completion: $0) }
        try waitFor { other.markSending(eventID: e.id, shards: upper, targets: 10, passStart: [], priority: 10, completion: $0) }
        var c = EventCounters()
        c.answers = 300
        c.invalid = 240
        try waitFor { other.checkpoint(eventID: e.id, shards: upper, cursor: [0x40], wrapped: false, counters: c, completion: $0) }
        var m = EventCounters()
        m.answers = 50
        m.invalid = 5
        try waitFor { f.storage.checkpoint(eventID: e.id, shards: mine, cursor: [0x20], wrapped: false, counters: m, completion: $0) }
        // Each side reads the other's part only (its own it counts live).
        t = try #require(try f.storage.pruneGuardTally(eventID: e.id, excluding: mine))
        #expect(t == PruneGuardTally(answers: 300, invalid: 240, startedShards: Shards.count, shardCount: Shards.count))
        t = try #require(try other.pruneGuardTally(eventID: e.id, excluding: upper))
        #expect(t == PruneGuardTally(answers: 50, invalid: 5, startedShards: Shards.count, shardCount: Shards.count))
        // A holder resuming the upper shards starts from their stored tally.
        let resumed = try other.unfinishedEvents(channelNum: ch.num, shards: upper, afterSeq: 0, throughSeq: .max)
        #expect(resumed.first?.record.counters.answers == 300 && resumed.first?.record.counters.invalid == 240)

        // A trip by one worker is seen by the other; the second to record it is told so.
        #expect(try other.recordPruneGuardTrip(eventID: e.id))
        #expect(try f.storage.pruneGuardTally(eventID: e.id, excluding: mine)?.tripped == true)
        #expect(try f.storage.recordPruneGuardTrip(eventID: e.id) == false)
        #expect(try other.recordPruneGuardTrip(eventID: e.id) == false)

        // A final state carries the tally too.
        c.answers = 400
        try other.finishEvent(eventID: e.id, shards: upper, state: .done, counters: c, reason: nil, supersededBy: nil)
        #expect(try f.storage.pruneGuardTally(eventID: e.id, excluding: mine)?.answers == 400)
    }

    /// Written under a lease another worker holds now, a checkpoint's tally is dropped with
    /// the rest of it (fenced).
    @Test func aTallyWrittenUnderALostLeaseIsDropped() throws {
        let f = try Fixture(.postgres)
        let ch = try f.channel()
        let e = try f.publish().event
        let (short, lease) = try f.sendingUnderShortLease(ch, e)
        #expect(try f.claimOnceLapsed(ch) != nil)
        var c = EventCounters()
        c.answers = 500
        c.invalid = 500
        #expect(throws: LeaseLost(channelNum: ch.num)) {
            try waitFor {
                short.checkpoint(eventID: e.id, shards: lease.shards, cursor: [0x40], wrapped: false, counters: c, completion: $0)
            }
        }
        #expect(try f.storage.pruneGuardTally(eventID: e.id, excluding: ShardSet([]))?.answers == 0)
    }
}
