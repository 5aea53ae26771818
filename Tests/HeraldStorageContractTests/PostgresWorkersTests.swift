import Foundation
import HeraldCore
import HeraldPostgres
import HeraldPostgresStore
import HeraldStore
import HeraldTestSupport
import Testing

/// What only several workers on one PostgreSQL database can show: leases shared out and
/// fenced, and one event for one Idempotency-Key posted to two workers at once.
@Suite struct PostgresWorkersTests {
    @Test func aLeaseIsHeldByOneWorkerAtATimeAndReleasedAtOnce() throws {
        let f = try Fixture(.postgres)
        let ch = try f.channel()
        let other = try f.secondWorker()
        let lease = try #require(try f.storage.acquireLease(channelNum: ch.num))
        #expect(lease.shards.isAll && lease.expiresAtMillis != nil)
        #expect(try other.acquireLease(channelNum: ch.num) == nil)
        // Asking again renews what it holds (same shards).
        #expect(try f.storage.acquireLease(channelNum: ch.num)?.shards == .all)
        f.storage.releaseLease(lease)
        let taken = try #require(try other.acquireLease(channelNum: ch.num))
        #expect(taken.shards.isAll)
        #expect(try f.storage.acquireLease(channelNum: ch.num) == nil)
    }

    @Test func writesUnderALostLeaseAreDroppedAndTheNewHolderResumesFromTheCheckpoint() throws {
        let f = try Fixture(.postgres)
        let ch = try f.channel()
        let e = try f.publish().event
        let (short, lease) = try f.sendingUnderShortLease(ch, e)
        var c = EventCounters()
        c.sent = 4
        try waitFor { short.checkpoint(eventID: e.id, shards: lease.shards, cursor: [0x40], wrapped: false, counters: c, completion: $0) }
        // The lease lapses by the database's clock; another worker claims every shard.
        let taken = try #require(try f.claimOnceLapsed(ch))
        #expect(taken.shards.isAll)
        // The old holder's late writes change nothing, and tell it the lease is lost.
        c.sent = 9
        #expect(throws: LeaseLost(channelNum: ch.num)) {
            try waitFor {
                short.checkpoint(eventID: e.id, shards: lease.shards, cursor: [0xf0], wrapped: false, counters: c, completion: $0)
            }
        }
        #expect(throws: LeaseLost(channelNum: ch.num)) {
            try short.finishEvent(eventID: e.id, shards: lease.shards, state: .done, counters: c, reason: nil, supersededBy: nil)
        }
        var r = try #require(try f.storage.event(id: e.id))
        #expect(r.state == .sending && r.cursor == [0x40] && r.counters.sent == 4)
        // The new holder's writes count.
        c.sent = 10
        try f.storage.finishEvent(eventID: e.id, shards: taken.shards, state: .done, counters: c, reason: nil, supersededBy: nil)
        r = try #require(try f.storage.event(id: e.id))
        #expect(r.state == .done && r.counters.sent == 10)
    }

    @Test func anEventIsDoneOnlyOnceEveryShardIsDone() throws {
        let f = try Fixture(.postgres)
        let ch = try f.channel()
        let e = try f.publish().event
        let other = try f.secondWorker()
        let all = try #require(try f.storage.acquireLease(channelNum: ch.num))
        // Hand half the shards to the other worker.
        let upper = ShardSet(Shards.count / 2..<Shards.count)
        f.storage.releaseLease(Lease(channelNum: ch.num, shards: upper))
        let mine = ShardSet(0..<Shards.count / 2)
        let theirs = try #require(try other.acquireLease(channelNum: ch.num))
        #expect(theirs.shards == upper && all.shards.isAll)
        var c = EventCounters()
        c.targets = 6
        c.sent = 6
        try f.storage.finishEvent(eventID: e.id, shards: mine, state: .done, counters: c, reason: nil, supersededBy: nil)
        #expect(try f.storage.event(id: e.id)?.state == .queued)
        c.targets = 4
        c.sent = 3
        c.failed = 1
        try other.finishEvent(eventID: e.id, shards: theirs.shards, state: .done, counters: c, reason: nil, supersededBy: nil)
        let r = try #require(try f.storage.event(id: e.id))
        // Progress sums the shards, and reads the same on every worker.
        #expect(r.state == .done && r.counters.targets == 10 && r.counters.sent == 9 && r.counters.failed == 1)
        #expect(try other.event(id: e.id) == r)
    }

    @Test func theSameIdempotencyKeyPostedToTwoWorkersAtOnceMakesOneEvent() throws {
        let f = try Fixture(.postgres)
        try f.channel()
        let workers = [f.storage, try f.secondWorker() as any HeraldStorage]
        let event = try f.event()
        for round in 0..<20 {
            let results = Locked<[PublishResult]>([])
            let go = DispatchSemaphore(value: 0)
            let done = DispatchGroup()
            for w in workers {
                let box = UncheckedBox(w)
                done.enter()
                Thread.detachNewThread {
                    go.wait()
                    if let r = try? box.value.publish(channelID: "m", event: event, idempotencyKey: "k\(round)", dryRun: false) {
                        results.withLock { $0.append(r) }
                    }
                    done.leave()
                }
            }
            go.signal()
            go.signal()
            done.wait()
            let rs = results.withLock { $0 }
            #expect(rs.count == 2)
            #expect(Set(rs.map(\.event.id)).count == 1)
            #expect(rs.filter(\.created).count == 1)
        }
        #expect(try f.storage.channel(id: "m")?.lastSeq == 20)
    }
}

extension PostgresWorkersTests {
    /// The second guard: an event with the key committed by someone who did not take the
    /// channel's row lock (between this publish's lookup and its insert) makes the insert
    /// fail on the unique index; the publish is decided again and answers with that event.
    @Test func theUniqueIndexTurnsALostRaceIntoAReplay() throws {
        let f = try Fixture(.postgres)
        let ch = try f.channel()
        let raw = try PostgresConnection(PostgresOptions(connection: try PostgresConnectionString(try #require(f.url))))
        defer { raw.close() }
        try raw.execute("BEGIN")
        try raw.run(
            """
            INSERT INTO events (id, channel, seq, kind, aps_timestamp, payload, priority, state, idempotency_key, created_at_ms)
            VALUES ('evt_other', $1, 99, 'update', 1, '\\x7b7d'::bytea, 10, 'queued', 'k', $2)
            """, [.int8(ch.num), .int8(f.clock.nowMillis())])
        let result = Locked<PublishResult?>(nil)
        let failure = Locked<String?>(nil)
        let done = DispatchSemaphore(value: 0)
        let storage = UncheckedBox(f.storage)
        let event = try f.event()
        Thread.detachNewThread {
            do {
                let r = try storage.value.publish(channelID: "m", event: event, idempotencyKey: "k", dryRun: false)
                result.withLock { $0 = r }
            } catch { failure.withLock { $0 = "\(error)" } }
            done.signal()
        }
        // The publish's insert waits on the uncommitted key (a lock on this transaction's id,
        // not granted); once it does, the other side commits.
        let waiting = """
            SELECT count(*) FROM pg_locks l
            WHERE NOT l.granted AND l.locktype = 'transactionid' AND l.transactionid = (
                SELECT transactionid FROM pg_locks WHERE pid = pg_backend_pid() AND locktype = 'transactionid' AND granted)
            """
        let blocked = Poll.until(timeout: 10, interval: 0.01) { (try? raw.queryValue(waiting))??.int64Value ?? 0 > 0 }
        #expect(blocked, "the publish waited on the uncommitted key")
        try raw.execute("COMMIT")
        done.wait()
        #expect(failure.withLock { $0 } == nil)
        let r = try #require(result.withLock { $0 })
        #expect(!r.created && r.event.id == "evt_other")
        #expect(try f.storage.channel(id: "m")?.lastSeq == 0)
    }
}

/// Hands a storage reference to a thread (the storages are thread-safe).
struct UncheckedBox: @unchecked Sendable {
    let value: any HeraldStorage
    init(_ v: any HeraldStorage) { value = v }
}
