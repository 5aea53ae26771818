import Testing

@testable import HeraldPostgres

@Suite struct PipelineTests {
    let db: TestDatabase
    let conn: PostgresConnection

    init() throws {
        db = try TestDatabase()
        conn = try db.connect()
        try conn.execute("CREATE TABLE kv(k int8 PRIMARY KEY, v text NOT NULL)")
    }

    @Test func everyStatementRunsAndReturnsItsOwnResult() throws {
        var batch = (0..<500).map {
            PostgresStatement("INSERT INTO kv VALUES ($1, $2) RETURNING k * 2 AS twice", [.int($0), .text("v\($0)")])
        }
        batch.append(PostgresStatement("SELECT count(*) AS n FROM kv"))
        let results = try conn.pipeline(batch)
        #expect(results.count == 501)
        #expect(
            try results[0..<500].enumerated().allSatisfy { i, r in try r.rows.first?.int64("twice") == Int64(2 * i) && r.affectedRows == 1 }
        )
        #expect(try results[500].rows.first?.int64("n") == 500)
        #expect(try conn.queryValue("SELECT v FROM kv WHERE k = 499") == "v499")
    }

    @Test func aFailingStatementThrowsItsErrorAndNothingIsApplied() throws {
        let batch = [
            PostgresStatement("INSERT INTO kv VALUES (1, 'a')"),
            PostgresStatement("INSERT INTO kv VALUES (1, 'again')"),  // 23505
            PostgresStatement("INSERT INTO kv VALUES (2, 'b')"),
        ]
        let e = try #require(throws: PostgresError.self) { try conn.pipeline(batch) }
        #expect(e.sqlState == .uniqueViolation)
        #expect(e.sql == batch[1].sql)
        #expect(try conn.queryValue("SELECT count(*) FROM kv") == 0)  // one implicit transaction
        #expect(try conn.pipeline([PostgresStatement("SELECT 7::int8 AS x")])[0].rows[0]["x"] == 7)
    }

    @Test func aLargeBatchDoesNotDeadlockOnFullSocketBuffers() throws {
        // ~8 MB of requests and ~8 MB of answers, far beyond the socket buffers.
        let big = String(repeating: "x", count: 4000)
        let batch = (0..<2000).map { PostgresStatement("INSERT INTO kv VALUES ($1, $2) RETURNING v", [.int($0), .text(big)]) }
        let results = try conn.pipeline(batch)
        #expect(results.count == 2000)
        #expect(results.allSatisfy { $0.rows.first?["v"] == .text(big) })
    }
}
