import HeraldCore
import HeraldPostgres
import HeraldPostgresStore
import HeraldStore
import HeraldTestSupport
import Testing

/// Migration 9 (Migrations/postgres/0009_shard_key.sql) keys subscriptions by (channel,
/// kind, shard, token): a version-8 database with subscriptions migrates (refused while a
/// worker is alive), and afterwards the scan returns the same tokens in token order for
/// every shard set, and the statements that find a subscription by its token find the
/// migrated rows.
@Suite struct ShardKeyMigrationTests {
    static let through8 = Array(PostgresMigration.herald.filter { $0.version <= 8 })
    static let now: Int64 = 1_796_000_000

    /// A version-8 database: channel "m" with `activity` tokens (every tenth expired) and
    /// `pushToStart` tokens, each on its shard.
    static func versionEight(activity: [[UInt8]], pushToStart: [[UInt8]]) throws -> (url: String, c: PostgresConnection) {
        let url = try PostgresCluster.shared().makeDatabase("shardkey")
        let c = try PostgresConnection(PostgresOptions(connection: try PostgresConnectionString(url)))
        #expect(try c.migrate(Self.through8) == Self.through8.map(\.version))
        try c.run(
            """
            INSERT INTO channels (id, bundle_id, mode, environment, storage_policy, created_at_ms)
            VALUES ('m', 'com.example.app', 'fanout', 'sandbox', 'none', 0)
            """)
        let rows =
            activity.enumerated().map { (i, t) in (t, Int64(0), i % 10 == 9 ? now - 1 : now + 3600) }
            + pushToStart.map { ($0, 1, now + 3600) }
        try c.run(
            """
            INSERT INTO subscriptions (channel, shard, kind, token, registered_at_ms, expires_at)
            SELECT 1, u.shard, u.kind, u.token, 5, u.expires_at FROM unnest($1::int8[], $2::int8[], $3::bytea[], $4::int8[])
            AS u(shard, kind, token, expires_at)
            """,
            [
                .array(rows.map { .int(Shards.shard(of: $0.0)) }), .array(rows.map { .int8($0.1) }), .array(rows.map { .bytea($0.0) }),
                .array(rows.map { .int8($0.2) }),
            ])
        return (url, c)
    }

    /// Every row of a pass over `shards`, `limit` at a time.
    static func pass(_ scan: SubscriptionScan, _ channel: Int64, _ kind: SubscriptionKind, _ shards: ShardSet, before: [UInt8]? = nil)
        throws -> [[UInt8]]
    {
        var seen: [[UInt8]] = []
        var after: [UInt8] = []
        while true {
            let rows = try scan.next(channelNum: channel, kind: kind, shards: shards, after: after, before: before, now: now, limit: 300)
            seen += rows
            guard rows.count == 300, let last = rows.last else { return seen }
            after = last
        }
    }

    @Test func aPopulatedDatabaseMigratesAndScansTheSameTokensInOrder() throws {
        let activity = tokens(6000, seed: 9)
        let pushToStart = tokens(300, seed: 10)
        let (url, c) = try Self.versionEight(activity: activity, pushToStart: pushToStart)
        defer { c.close() }
        let live = activity.enumerated().filter { $0.offset % 10 != 9 }.map(\.element).sorted { $0.lexicographicallyPrecedes($1) }

        // A worker alive: refused, nothing changed.
        try c.run("INSERT INTO workers (id, expires_at) VALUES ('w1', clock_timestamp() + interval '15 seconds')")
        let e = try #require(throws: PostgresError.self) { try c.migrate() }
        #expect("\(e)".contains("stop every worker"))
        #expect(try c.appliedMigrations() == Self.through8.map(\.version))
        let key = "SELECT pg_get_indexdef('subscriptions_pkey'::regclass)"
        #expect(try c.queryValue(key)?.textValue?.contains("(channel, kind, token)") == true)
        try c.run("UPDATE workers SET expires_at = clock_timestamp() - interval '1 second'")
        #expect(try c.migrate() == [9])
        #expect(
            try c.queryValue(key)?.textValue?.contains("(channel, kind, shard, token) INCLUDE (registered_at_ms, expires_at)") == true)
        #expect(try c.queryValue("SELECT count(*) FROM subscriptions")?.int64Value == 6300)

        let store = try PostgresStore(url: url, clock: ManualClock(Double(Self.now)), connections: 2)
        let scan = try store.makeScanner()
        let sets: [ShardSet] = [
            .all, ShardSet(0..<24), ShardSet(stride(from: 0, to: Shards.count, by: 3)), ShardSet([5]), ShardSet([0, 47]),
        ]
        for shards in sets {
            #expect(try Self.pass(scan, 1, .activity, shards) == live.filter { shards.holds(token: $0) }, "\(shards)")
        }
        let bound = live[live.count / 2]
        let upper = ShardSet(24..<48)
        #expect(
            try Self.pass(scan, 1, .activity, upper, before: bound)
                == live.filter { upper.holds(token: $0) && !bound.lexicographicallyPrecedes($0) })
        #expect(try Self.pass(scan, 1, .pushToStart, .all) == pushToStart.sorted { $0.lexicographicallyPrecedes($1) })

        // The migrated rows are found by their token: a re-registration updates, an
        // unregistration and a 410 remove, a batch counts them as registered.
        #expect(try store.register(channelID: "m", token: live[0], kind: .activity, replaces: nil, expiresAt: nil).created == false)
        try store.unregister(channelID: "m", token: live[1])
        #expect(try store.prune(channelNum: 1, [(.activity, live[2], Self.now * 1000)]) == 1)
        let b = try store.batch(
            channelID: "m", subscribe: live[3..<103].map { SubscriptionInput(token: $0) }, unsubscribe: [live[103], live[104]])
        #expect(b.subscribed == 0 && b.updated == 100 && b.unsubscribed == 2)
        #expect(try store.countSubscriptions(channelNum: 1, kind: .activity) == Int64(live.count - 4))
    }
}
