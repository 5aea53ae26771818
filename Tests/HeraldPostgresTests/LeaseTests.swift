import HeraldCore
import Testing

@testable import HeraldPostgres

/// The lease primitive on Herald's schema: claims never overlap, expiry is the database's,
/// a takeover fences the old owner out, a release hands shards over at once.
@Suite struct LeaseTests {
    let db: TestDatabase
    let conn: PostgresConnection
    let shards = 64

    init() throws {
        db = try TestDatabase()
        conn = try db.connect()
        try conn.migrate()
        try LeaseTable().ensureShards(channel: 1, count: shards, on: conn)
        try conn.run(
            """
            INSERT INTO events (id, channel, seq, kind, aps_timestamp, payload, priority, state, created_at_ms)
            VALUES ('ev1', 1, 1, 'update', 1, '\\x7b7d', 10, 'sending', 0)
            """)
    }

    @Test func twoWorkersRacingForTheSameShardsNeverBothHoldOne() throws {
        let table = LeaseTable()
        let db = self.db
        for round in 0..<10 {
            let workers = [WorkerID.random(), WorkerID.random()]
            let granted = Locked<[[ShardLease]]>([[], []])
            let failures = Locked<[String]>([])
            onThreads(2) { i in
                do {
                    let c = try db.connect()
                    // Both ask for every shard at the same moment, in small bites.
                    var mine: [ShardLease] = []
                    while true {
                        let got = try table.claim(owner: workers[i], limit: 8, on: c)
                        if got.isEmpty { break }
                        mine += got
                    }
                    granted.withLock { $0[i] = mine }
                } catch { failures.withLock { $0.append("\(error)") } }
            }
            #expect(failures.withLock { $0 } == [])
            let (a, b) = granted.withLock { ($0[0], $0[1]) }
            let sa = Set(a.map(\.shard))
            let sb = Set(b.map(\.shard))
            #expect(sa.isDisjoint(with: sb), "round \(round)")
            #expect(sa.union(sb) == Set(0..<Int64(shards)), "round \(round)")
            // The database agrees on the owners.
            let owners = try conn.query("SELECT shard, owner FROM leases WHERE channel = 1")
            for r in owners {
                let shard = try r.int64("shard")
                #expect(try r.text("owner") == (sa.contains(shard) ? workers[0] : workers[1]).rawValue)
            }
            try table.release(owner: workers[0], on: conn)
            try table.release(owner: workers[1], on: conn)
        }
    }

    @Test func aHeldLeaseIsNotClaimedAgain() throws {
        let table = LeaseTable(duration: .seconds(30))
        let a = try table.claim(owner: .random(), limit: 100, on: conn)
        #expect(a.count == shards)
        #expect(a.allSatisfy { $0.attempt == 1 && $0.isHeld(at: .now) })
        #expect(try table.claim(owner: .random(), limit: 100, on: db.connect()).isEmpty)
    }

    @Test func anExpiredLeaseIsTakenOverWithTheNextAttemptAndFencesTheOldOwner() throws {
        try conn.run("DELETE FROM leases WHERE shard > 0")  // one shard: the takeover must pick it
        // Zero duration: expired at once by the database's clock, no waiting needed.
        let old = try #require(try LeaseTable(duration: .zero).claim(owner: .random(), limit: 1, on: conn).first)
        #expect(!old.isHeld(at: .now))
        let other = try db.connect()
        let table = LeaseTable(duration: .seconds(30))
        let new = try #require(try table.claim(owner: .random(), limit: 1, on: other).first)
        #expect(new.shard == old.shard)
        #expect(new.attempt == old.attempt + 1)

        // The old owner's writes and renewals now fail; the new owner's succeed.
        #expect(try table.checkpoint(old, event: "ev1", cursor: [1], sent: 5, failed: 0, done: false, on: conn) == nil)
        #expect(try table.renew(old, on: conn) == nil)
        #expect(try table.fenced(old, on: conn) { c in try c.run("UPDATE events SET targets = 99") } == nil)
        #expect(try conn.queryValue("SELECT targets FROM events WHERE id = 'ev1'") == 0)
        #expect(try conn.queryValue("SELECT count(*) FROM checkpoints") == 0)

        let renewed = try #require(try table.checkpoint(new, event: "ev1", cursor: [2], sent: 7, failed: 1, done: false, on: other))
        #expect(renewed.attempt == new.attempt)
        #expect(renewed.expiresAtMicros >= new.expiresAtMicros)
        #expect(try table.fenced(new, on: other) { c in try c.run("UPDATE events SET targets = 7") } == 1)
        let cp = try #require(try conn.queryOne("SELECT shard, cursor, sent, failed FROM checkpoints WHERE event_id = 'ev1'"))
        #expect(try cp.int64("shard") == new.shard && cp["cursor"] == .bytea([2]) && cp["sent"] == 7)
    }

    @Test func aReleasedLeaseIsClaimableAtOnce() throws {
        let table = LeaseTable(duration: .seconds(60))
        let first = WorkerID.random()
        let held = try table.claim(owner: first, limit: 100, on: conn)
        #expect(held.count == shards)
        #expect(try table.release(owner: first, on: conn) == shards)
        let next = try table.claim(owner: .random(), limit: 100, on: db.connect())
        #expect(next.count == shards)
        #expect(next.allSatisfy { $0.attempt == 2 })
        #expect(try table.renew(held[0], on: conn) == nil)
    }

    @Test func theLocalDeadlineIsNeverLaterThanTheDatabasesExpiry() throws {
        let table = LeaseTable(duration: .seconds(15))
        let before = ContinuousClock.now
        let lease = try #require(try table.claim(owner: .random(), limit: 1, on: conn).first)
        #expect(lease.localDeadline <= ContinuousClock.now + .seconds(15))
        #expect(lease.localDeadline > before + .seconds(14))
        let renewed = try #require(try table.renew(lease, on: conn))
        #expect(renewed.localDeadline >= lease.localDeadline)
    }
}
