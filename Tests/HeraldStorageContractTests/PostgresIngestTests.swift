import Foundation
import HeraldCore
import HeraldPostgres
import HeraldPostgresStore
import HeraldStore
import HeraldTestSupport
import Testing

/// The batch ingest on PostgreSQL writes new tokens with COPY and registered ones with an
/// upsert. These check the cases COPY alone would get wrong.
@Suite struct PostgresIngestTests {
    static func tokens(_ n: Int, _ seed: UInt8) -> [[UInt8]] {
        (0..<n).map { i in [seed, UInt8(i >> 8), UInt8(i & 255)] + Array(repeating: 7, count: 29) }
    }

    @Test func aBatchMixingNewAndRegisteredTokensCountsAndJoinsExactlyTheNewOnes() throws {
        let fx = try Fixture(.postgres)
        try fx.channel()
        let first = Self.tokens(30_000, 1)
        // More than one chunk (10k): the first import is all COPY.
        let a = try fx.storage.batch(channelID: "m", subscribe: first.map { SubscriptionInput(token: $0) }, unsubscribe: [])
        #expect(a.subscribed == 30_000 && a.updated == 0 && a.joined.count == 30_000)
        // Half registered, half new, push-to-start beside them, a repeat in the batch.
        let fresh = Self.tokens(500, 2)
        let mixed =
            first.prefix(500).map { SubscriptionInput(token: $0) } + fresh.map { SubscriptionInput(token: $0) }
            + fresh.prefix(10).map { SubscriptionInput(token: $0, kind: .pushToStart) } + [SubscriptionInput(token: fresh[0])]
        fx.clock.advance(by: 5)
        let b = try fx.storage.batch(channelID: "m", subscribe: mixed, unsubscribe: [])
        #expect(b.subscribed == 510 && b.updated == 501, "\(b.subscribed) \(b.updated)")
        #expect(b.joined == fresh.sorted { $0.lexicographicallyPrecedes($1) })
        let ch = try #require(try fx.storage.channel(id: "m"))
        #expect(try fx.storage.countSubscriptions(channelNum: ch.num, kind: .activity) == 30_500)
        #expect(try fx.storage.countSubscriptions(channelNum: ch.num, kind: .pushToStart) == 10)
        // Re-registered tokens got the new registration time (what protects them from an
        // older 410): a prune stamped between the two batches removes none of them.
        let pruned = try fx.storage.prune(
            channelNum: ch.num, first.prefix(500).map { (kind: .activity, token: $0, beforeMillis: fx.clock.nowMillis() - 1) })
        #expect(pruned == 0)
    }

    /// A token another transaction registers after the probe and before the COPY: the COPY
    /// waits for it, fails on the key, and the upsert takes the chunk — the token counted
    /// as updated, not joined.
    @Test func aTokenRegisteredMeanwhileFallsBackToTheUpsert() throws {
        let fx = try Fixture(.postgres)
        let ch = try fx.channel()
        let batch = Self.tokens(2_000, 3)
        let raced = batch[1_234]
        let other = try PostgresConnection(PostgresOptions(connection: try PostgresConnectionString(try #require(fx.url))))
        defer { other.close() }
        try other.execute("BEGIN")
        try other.run(
            "INSERT INTO subscriptions (channel, shard, kind, token, registered_at_ms) VALUES ($1, $2, 0, $3, $4)",
            [.int8(ch.num), .int(Shards.shard(of: raced)), .bytea(raced), .int8(fx.clock.nowMillis())])
        let result = Locked<Result<BatchResult, Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let storage = fx.storage
        Thread {
            result.withLock { r in
                r = Result { try storage.batch(channelID: "m", subscribe: batch.map { SubscriptionInput(token: $0) }, unsubscribe: []) }
            }
            done.signal()
        }.start()
        // The batch is blocked on the uncommitted row (its COPY waits for the key).
        #expect(done.wait(timeout: .now() + 1) == .timedOut)
        try other.execute("COMMIT")
        #expect(done.wait(timeout: .now() + 30) == .success)
        let r = try #require(result.withLock { $0 }).get()
        #expect(r.subscribed == 1_999 && r.updated == 1, "\(r.subscribed) \(r.updated)")
        #expect(r.joined.count == 1_999 && !r.joined.contains(raced))
        #expect(try fx.storage.countSubscriptions(channelNum: ch.num, kind: .activity) == 2_000)
    }
}
