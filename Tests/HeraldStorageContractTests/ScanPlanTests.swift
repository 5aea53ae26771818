import Foundation
import HeraldPostgres
import HeraldStore
import Testing

@testable import HeraldPostgresStore

/// The fan-out scan on PostgreSQL reads only its lease's shards' rows: its statement
/// (`PostgresScanner.statement`) is one ordered range per shard, merged (a MERGE APPEND of
/// index scans on the key), each stopping early, no row read and thrown away by a filter.
/// Checked on the plan PostgreSQL runs (EXPLAIN ANALYZE of the prepared statement with the
/// scanner's session settings), which counts rows, not time.
@Suite struct ScanPlanTests {
    @Test func theStatementIsOneRangePerShardOfTheSet() {
        let one = PostgresScanner.statement(shards: ShardSet([7]), bounded: false)
        #expect(one.contains("shard = 7 AND token > $3") && !one.contains("UNION") && !one.contains("$6"))
        let some = PostgresScanner.statement(shards: ShardSet([0, 5, 47]), bounded: true)
        #expect(some.components(separatedBy: " UNION ALL ").count == 3)
        #expect(["shard = 0 ", "shard = 5 ", "shard = 47 "].allSatisfy(some.contains))
        #expect(some.components(separatedBy: "token <= $6").count == 4)
        #expect(some.hasSuffix(") AS u ORDER BY token LIMIT $5"))
        let all = PostgresScanner.statement(shards: .all, bounded: false)
        #expect(all.components(separatedBy: " UNION ALL ").count == Shards.count)
    }

    /// The plan nodes of an EXPLAIN (FORMAT JSON) plan, depth first.
    static func nodes(_ plan: [String: Any]) -> [[String: Any]] {
        [plan] + ((plan["Plans"] as? [[String: Any]]) ?? []).flatMap(nodes)
    }

    @Test(arguments: [48, 24, 16]) func aLeaseReadsOnlyItsShardsRowsThroughAMergeOfIndexRanges(_ held: Int) throws {
        let f = try Fixture(.postgres)
        let ch = try f.channel()
        let t = (0..<20_000).map { i in
            withUnsafeBytes(of: (UInt64(i) &* 0x9E37_79B9_7F4A_7C15).bigEndian) { Array($0) } + [UInt8](repeating: 1, count: 24)
        }
        _ = try f.storage.batch(channelID: "m", subscribe: t.map { SubscriptionInput(token: $0) }, unsubscribe: [])
        let shards = ShardSet(stride(from: 0, to: Shards.count, by: Shards.count / held))
        let c = try PostgresConnection(PostgresOptions(connection: try PostgresConnectionString(try #require(f.url))))
        defer { c.close() }
        try c.execute(PostgresScanner.sessionSettings)
        try c.execute("ANALYZE subscriptions")
        try c.execute(
            "PREPARE scan(int8, int8, bytea, int8, int8) AS " + PostgresScanner.statement(shards: shards, bounded: false))
        let limit = 2000
        let json = try #require(
            try c.queryValue(
                """
                EXPLAIN (ANALYZE, FORMAT JSON)
                EXECUTE scan(\(ch.num), \(SubscriptionKind.activity.storedCode), '\\x40', \(f.clock.nowSeconds()), \(limit))
                """
            )?.textValue)
        let doc = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: Any]])
        let plan = try #require(doc.first?["Plan"] as? [String: Any])
        let all = Self.nodes(plan)
        let scans = all.filter { ($0["Node Type"] as? String)?.hasPrefix("Index") == true }
        #expect(scans.count == held, "one index range per shard")
        #expect(scans.allSatisfy { $0["Index Name"] as? String == "subscriptions_pkey" })
        #expect(all.contains { $0["Node Type"] as? String == "Merge Append" }, "merged in token order, not sorted")
        #expect(!all.contains { $0["Node Type"] as? String == "Sort" })
        #expect(plan["Actual Rows"] as? Int == limit)
        // Each range stops once the merge has its rows: at most one row read beyond them per
        // shard, none read and dropped.
        let read = scans.reduce(0) { $0 + (($1["Actual Rows"] as? Int) ?? 0) }
        #expect(read <= limit + held, "\(read) rows read for \(limit)")
        #expect(scans.allSatisfy { (($0["Rows Removed by Filter"] as? Int) ?? 0) == 0 })
    }
    /// After a batch of `vacuumAfterCreated` new tokens or more the scan reads no table page
    /// (the batch vacuumed `subscriptions`: an index-only scan with no heap fetch); a smaller
    /// batch leaves its rows' pages to autovacuum, so the scan reads a table page per row of
    /// theirs. Autovacuum is off for this database's table: a worker of the cluster's (the
    /// whole suite makes many databases) may hold the table while the batch commits, and the
    /// batch's `VACUUM (SKIP_LOCKED)` then skips it (once, in the whole suite, the scan read
    /// 10,000 table pages); or it may vacuum the small batch's pages before they are looked at.
    @Test func aBulkBatchLeavesTheScanIndexOnly() throws {
        let f = try Fixture(.postgres)
        let ch = try f.channel()
        let bulk = PostgresStore.vacuumAfterCreated
        let tokens = (0..<(bulk + 100)).map { i in
            withUnsafeBytes(of: (UInt64(i) &* 0x9E37_79B9_7F4A_7C15).bigEndian) { Array($0) } + [UInt8](repeating: 2, count: 24)
        }
        let c = try PostgresConnection(PostgresOptions(connection: try PostgresConnectionString(try #require(f.url))))
        defer { c.close() }
        try c.execute("ALTER TABLE subscriptions SET (autovacuum_enabled = off)")
        try c.execute(PostgresScanner.sessionSettings)
        try c.execute(
            "PREPARE scan(int8, int8, bytea, int8, int8) AS " + PostgresScanner.statement(shards: .all, bounded: false))
        func heapFetches() throws -> (rows: Int, fetches: Int) {
            let json = try #require(
                try c.queryValue(
                    """
                    EXPLAIN (ANALYZE, FORMAT JSON)
                    EXECUTE scan(\(ch.num), \(SubscriptionKind.activity.storedCode), '\\x', \(f.clock.nowSeconds()), 1000000)
                    """
                )?.textValue)
            let doc = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: Any]])
            let plan = try #require(doc.first?["Plan"] as? [String: Any])
            let scans = Self.nodes(plan).filter { $0["Node Type"] as? String == "Index Only Scan" }
            #expect(scans.count == Shards.count)
            return (plan["Actual Rows"] as? Int ?? -1, scans.reduce(0) { $0 + (($1["Heap Fetches"] as? Int) ?? 0) })
        }
        let r = try f.storage.batch(channelID: "m", subscribe: tokens[..<bulk].map { SubscriptionInput(token: $0) }, unsubscribe: [])
        #expect(r.subscribed == bulk)
        let first = try heapFetches()
        #expect(first.rows == bulk)
        #expect(first.fetches == 0, "read \(first.fetches) table pages")
        _ = try f.storage.batch(channelID: "m", subscribe: tokens[bulk...].map { SubscriptionInput(token: $0) }, unsubscribe: [])
        let after = try heapFetches()
        #expect(after.rows == bulk + 100)
        #expect(after.fetches >= 100, "the small batch's rows are on pages not vacuumed yet")
    }
}
