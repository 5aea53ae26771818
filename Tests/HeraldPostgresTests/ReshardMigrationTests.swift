import Testing

@testable import HeraldPostgres

/// Migration 8 (Migrations/postgres/0008_48_shards.sql) moves a database made with 16
/// shards per channel to 48: every subscription to FNV-1a mod 48 (the same function as
/// `ShardHash`), an unfinished event's checkpoints to the three shards each old one became,
/// 48 free lease rows per channel; and it refuses while a worker is alive.
@Suite struct ReshardMigrationTests {
    let db: TestDatabase

    init() throws { db = try TestDatabase() }

    static let before = Array(PostgresMigration.herald.filter { $0.version <= 7 })
    /// Through migration 8 (the later ones have tests of their own).
    static let through8 = Array(PostgresMigration.herald.filter { $0.version <= 8 })

    /// A version-7 database: one channel of `tokens` on 16 shards, an event half sent on
    /// shards 0-7 by one holding (its counters on shard 0, as the store keeps them), and
    /// the 16 lease rows, held.
    func sixteenShardDatabase(_ tokens: [[UInt8]]) throws -> PostgresConnection {
        let c = try db.connect()
        try c.migrate(Self.before)
        try c.run(
            """
            INSERT INTO channels (id, bundle_id, mode, environment, storage_policy, created_at_ms, shard_count)
            VALUES ('match', 'com.example.app', 'fanout', 'sandbox', 'none', 0, 16)
            """)
        try c.run(
            """
            INSERT INTO subscriptions (channel, shard, kind, token, registered_at_ms)
            SELECT 1, u.shard, 0, u.token, 0 FROM unnest($1::int8[], $2::bytea[]) AS u(shard, token)
            """,
            [.array(tokens.map { .int(ShardHash.shard(of: $0, count: 16)) }), .array(tokens.map { .bytea($0) })])
        try c.run(
            """
            INSERT INTO events (id, channel, seq, kind, aps_timestamp, payload, priority, state, created_at_ms)
            VALUES ('ev1', 1, 1, 'update', 1, '\\x7b7d', 5, 'sending', 0)
            """)
        try c.run(
            """
            INSERT INTO checkpoints (event_id, shard, cursor, pass_start, targets, sent)
            SELECT 'ev1', s, '\\x80', '\\x', CASE WHEN s = 0 THEN 900 ELSE 0 END, CASE WHEN s = 0 THEN 450 ELSE 0 END
            FROM generate_series(0, 7) AS s
            """)
        try c.run(
            """
            INSERT INTO leases (channel, shard, owner, attempt, expires_at)
            SELECT 1, s, 'old-worker', 3, clock_timestamp() + interval '1 hour' FROM generate_series(0, 15) AS s
            """)
        return c
    }

    @Test func everyTokenMovesToItsShardOf48AndEveryCheckpointFollowsIt() throws {
        let toks = tokens(3000, seed: 48)
        let c = try sixteenShardDatabase(toks)
        #expect(try c.migrate(Self.through8) == [8])

        var stored: [[UInt8]: Int64] = [:]
        for r in try c.query("SELECT token, shard FROM subscriptions") { stored[try r.bytea("token")] = try r.int64("shard") }
        #expect(stored.count == toks.count)
        let wrong = toks.filter { stored[$0] != Int64(ShardHash.shard(of: $0, count: 48)) }
        #expect(wrong.isEmpty, "\(wrong.count) tokens on another shard than FNV-1a mod 48")
        #expect(try c.queryValue("SELECT count(DISTINCT shard) FROM subscriptions")?.int64Value == 48)

        // Old shard s became s, s + 16 and s + 32: each at the checkpoint s had; sums kept.
        let rows = try c.query("SELECT shard, cursor, targets, sent FROM checkpoints WHERE event_id = 'ev1' ORDER BY shard")
        #expect(try rows.map { try $0.int64("shard") } == (0...7).map(Int64.init) + (16...23).map(Int64.init) + (32...39).map(Int64.init))
        #expect(try rows.allSatisfy { try $0.bytea("cursor") == [0x80] })
        #expect(try rows.reduce(0) { $0 + (try $1.int64("targets")) } == 900)
        #expect(try rows.reduce(0) { $0 + (try $1.int64("sent")) } == 450)

        // 48 lease rows, all free, attempts kept (fencing still tells holdings apart).
        let free = "SELECT count(*) FROM leases WHERE channel = 1 AND owner IS NULL AND expires_at = '-infinity'"
        #expect(try c.queryValue(free)?.int64Value == 48)
        #expect(try c.queryValue("SELECT max(attempt) FROM leases")?.int64Value == 3)
        #expect(try c.queryValue("SELECT shard_count FROM channels WHERE id = 'match'")?.int64Value == 48)
        let byDefault =
            "SELECT column_default FROM information_schema.columns WHERE table_name = 'channels' AND column_name = 'shard_count'"
        #expect(try c.queryValue(byDefault)?.textValue == "48")
    }

    @Test func itRefusesWhileAWorkerIsAliveAndChangesNothing() throws {
        let toks = tokens(200, seed: 7)
        let c = try sixteenShardDatabase(toks)
        try c.run("INSERT INTO workers (id, expires_at) VALUES ('w1', clock_timestamp() + interval '15 seconds')")
        let e = try #require(throws: PostgresError.self) { try c.migrate() }
        #expect("\(e)".contains("stop every worker"))
        #expect(try c.appliedMigrations() == Self.before.map(\.version))
        #expect(try c.queryValue("SELECT max(shard) FROM subscriptions")?.int64Value ?? 99 < 16)
        // Once the worker's row has expired (it stopped, or died long enough ago), it applies.
        try c.run("UPDATE workers SET expires_at = clock_timestamp() - interval '1 second'")
        #expect(try c.migrate(Self.through8) == [8])
    }
}
