import Foundation
import HeraldPostgres

// Bulk-load and pipeline figures for docs/postgres.md (Benchmarks/postgres.sh).
//
//   herald-pg-bench URL [TOKENS...]     default 100000 1000000
//
// Loads TOKENS random 32-byte tokens into Herald's `subscriptions` table (Migrations/
// postgres, primary key (channel, shard, kind, token)), once per path, each into a fresh
// channel of an emptied table:
//   copy         COPY subscriptions FROM STDIN (FORMAT binary), one statement
//   copy_upsert  COPY into a temporary staging table, then one INSERT … SELECT … ON
//                CONFLICT DO NOTHING (what a registration that may repeat tokens needs)
//   unnest       INSERT … SELECT unnest($1::bytea[], $2::int8[]) ON CONFLICT DO NOTHING,
//                10,000 tokens per statement
// and then 5,000 single-row upserts one round trip each vs in one pipeline.
// Prints `name=value` lines; rows/s include encoding the values in Swift.

let args = CommandLine.arguments.dropFirst()
guard let url = args.first else {
    FileHandle.standardError.write(Data("usage: herald-pg-bench URL [TOKENS...]\n".utf8))
    exit(2)
}
let sizes = args.dropFirst().compactMap { Int($0) }
let shardCount = 16
let conn = try PostgresConnection(
    PostgresOptions(connection: try PostgresConnectionString(url), statementTimeout: .seconds(600)))
try conn.migrate()

func randomTokens(_ n: Int) -> [[UInt8]] {
    var g = SystemRandomNumberGenerator()
    return (0..<n).map { _ in (0..<32).map { _ in UInt8.random(in: 0...255, using: &g) } }
}

func seconds(_ body: () throws -> Void) rethrows -> Double {
    let start = ContinuousClock.now
    try body()
    let d = ContinuousClock.now - start
    return Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
}

func report(_ name: String, _ n: Int, _ s: Double) {
    print("\(name)_rows_per_s=\(Int(Double(n) / s))  (\(n) rows in \(String(format: "%.2f", s)) s)")
}

func fresh(_ conn: PostgresConnection) throws {
    for sql in ["TRUNCATE subscriptions", "VACUUM ANALYZE subscriptions", "CHECKPOINT"] { try conn.execute(sql) }
}

func run(_ conn: PostgresConnection, sizes: [Int]) throws {
    let copyColumns = "(channel, shard, kind, token, registered_at_ms)"

    for n in sizes.isEmpty ? [100_000, 1_000_000] : sizes {
        let tokens = randomTokens(n)
        let shards = tokens.map { Int64(ShardHash.shard(of: $0, count: shardCount)) }
        print("tokens=\(n)")

        try fresh(conn)
        report(
            "copy", n,
            try seconds {
                let loaded = try conn.copyIn("COPY subscriptions \(copyColumns) FROM STDIN (FORMAT binary)") { w in
                    for (i, t) in tokens.enumerated() { try w.append([1, .int8(shards[i]), 0, .bytea(t), 1_700_000_000_000]) }
                }
                precondition(loaded == n)
            })

        try fresh(conn)
        report(
            "copy_upsert", n,
            try seconds {
                try conn.transaction { c in
                    try c.execute("CREATE TEMPORARY TABLE staging (LIKE subscriptions INCLUDING DEFAULTS) ON COMMIT DROP")
                    _ = try c.copyIn("COPY staging \(copyColumns) FROM STDIN (FORMAT binary)") { w in
                        for (i, t) in tokens.enumerated() { try w.append([2, .int8(shards[i]), 0, .bytea(t), 1_700_000_000_000]) }
                    }
                    let inserted = try c.run("INSERT INTO subscriptions SELECT * FROM staging ON CONFLICT DO NOTHING")
                    precondition(inserted == n)
                }
            })

        try fresh(conn)
        let batch = 10_000
        report(
            "unnest", n,
            try seconds {
                var inserted = 0
                for start in stride(from: 0, to: n, by: batch) {
                    let end = min(start + batch, n)
                    inserted += try conn.run(
                        """
                        INSERT INTO subscriptions (channel, shard, kind, token, registered_at_ms)
                        SELECT $1, s, 0, t, $2 FROM unnest($3::bytea[], $4::int8[]) AS u(t, s)
                        ON CONFLICT DO NOTHING
                        """,
                        [
                            3, 1_700_000_000_000, .array(tokens[start..<end].map(PostgresValue.bytea)),
                            .array(shards[start..<end].map(PostgresValue.int8)),
                        ])
                }
                precondition(inserted == n)
            })
    }

    // Pipeline: one round trip per statement vs one per batch.
    try conn.execute("CREATE TABLE IF NOT EXISTS bench_kv (k int8 PRIMARY KEY, v int8 NOT NULL); TRUNCATE bench_kv")
    let upsert = "INSERT INTO bench_kv VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v"
    let statements = 5_000
    let serial = try seconds { for i in 0..<statements { try conn.run(upsert, [.int(i), .int(i)]) } }
    let piped = try seconds {
        for start in stride(from: 0, to: statements, by: 1_000) {
            _ = try conn.pipeline((start..<start + 1_000).map { PostgresStatement(upsert, [.int($0), .int($0 + 1)]) })
        }
    }
    print("round_trip_statements_per_s=\(Int(Double(statements) / serial))")
    print("pipeline_statements_per_s=\(Int(Double(statements) / piped))  (batches of 1000)")
    print("pipeline_gain=\(String(format: "%.1f", serial / piped))")

}

try run(conn, sizes: sizes)
