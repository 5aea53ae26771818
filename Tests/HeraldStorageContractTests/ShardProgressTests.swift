import HeraldCore
import Testing

@testable import HeraldPostgresStore
@testable import HeraldStore

/// How a worker reads an event's progress on the shards of its lease (pure: no database),
/// and the payloads of the event feed.
@Suite struct ShardProgressTests {
    func event() -> EventRecord {
        EventRecord.stored(
            id: "evt_1", channelNum: 1, channelID: "m", seq: 1, kind: .update, apsTimestamp: 1, payload: [], priority: 10,
            expiration: nil, state: .sending, failureReason: nil, supersededBy: nil, createdAtMillis: 0, startedAtMillis: nil,
            finishedAtMillis: nil, counters: EventCounters(), passStart: nil, cursor: nil, wrapped: false, broadcastState: .none,
            broadcastReason: nil)
    }

    func row(_ shard: Int, cursor: [UInt8]?, done: Bool = false, sent: Int64 = 0) -> ShardProgress.Row {
        var k = EventCounters()
        k.sent = sent
        k.targets = sent
        return ShardProgress.Row(shard: shard, passStart: [], cursor: cursor, wrapped: false, done: done, counters: k)
    }

    @Test func doneShardsAreLeftOutAndTheRestResumeTogether() throws {
        // Shards 0-3 were one worker's holding (same checkpoint, counters on shard 0); 1 done.
        let rows = [
            row(0, cursor: [0x40], sent: 7), row(1, cursor: [0x80], done: true, sent: 3), row(2, cursor: [0x40]), row(3, cursor: [0x40]),
        ]
        let p = try #require(ShardProgress.pick(event(), shards: ShardSet(0..<4), rows: rows))
        #expect(p.pending == ShardSet([0, 2, 3]))
        #expect(p.record.cursor == [0x40] && p.record.counters.sent == 7 && p.record.counters.targets == 7)
    }

    @Test func shardsLeftAtDifferentPlacesAreNotMerged() throws {
        // 0-1 left at 0x40 by one worker, 2-3 at 0x90 by another: resuming both from 0x40
        // would resend 2-3's tokens between 0x40 and 0x90.
        let rows = [row(0, cursor: [0x40], sent: 5), row(1, cursor: [0x40]), row(2, cursor: [0x90], sent: 9), row(3, cursor: [0x90])]
        let first = try #require(ShardProgress.pick(event(), shards: ShardSet(0..<4), rows: rows))
        #expect(first.pending == ShardSet([0, 1]) && first.record.cursor == [0x40] && first.record.counters.sent == 5)
        // Once 0-1 are done, the next read gives 2-3 from their own place.
        let later = rows.map {
            $0.shard < 2
                ? ShardProgress.Row(shard: $0.shard, passStart: [], cursor: [0x40], wrapped: false, done: true, counters: $0.counters) : $0
        }
        let second = try #require(ShardProgress.pick(event(), shards: ShardSet(0..<4), rows: later))
        #expect(second.pending == ShardSet([2, 3]) && second.record.cursor == [0x90] && second.record.counters.sent == 9)
        // Shards without a row have not started: they go together, from the beginning.
        let fresh = try #require(ShardProgress.pick(event(), shards: ShardSet(4..<8), rows: rows))
        #expect(fresh.pending == ShardSet(4..<8) && fresh.record.cursor == nil && fresh.record.counters.sent == 0)
        #expect(ShardProgress.pick(event(), shards: ShardSet([1]), rows: [row(1, cursor: nil, done: true)]) == nil)
    }

    @Test func feedPayloadsAreEventIdsOrJoinersOfAnotherWorker() {
        #expect(EventFeed.Payload.parse("evt_abc", ownWorker: "w1") == .event(id: "evt_abc"))
        let t1: [UInt8] = Array(repeating: 0xab, count: 32)
        let t2: [UInt8] = Array(repeating: 0x01, count: 32)
        let p = EventFeed.Payload.joined(worker: "w2", channelID: "final", tokens: [t1, t2][...])
        #expect(p.utf8.count < 8000)
        #expect(EventFeed.Payload.parse(p, ownWorker: "w1") == .joined(channelID: "final", tokens: [t1, t2]))
        #expect(EventFeed.Payload.parse(p, ownWorker: "w2") == nil, "its own announcement came back")
        #expect(EventFeed.Payload.parse("", ownWorker: "w1") == nil)
        let full = EventFeed.Payload.joined(
            worker: String(repeating: "w", count: 40), channelID: String(repeating: "c", count: 128),
            tokens: Array(repeating: t1, count: EventFeed.joinedPerNotice)[...])
        #expect(full.utf8.count < 8000)
    }
}
