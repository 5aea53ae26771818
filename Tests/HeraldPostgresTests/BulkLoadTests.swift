import Testing

@testable import HeraldPostgres

/// Both bulk paths for tokens: binary COPY and INSERT … SELECT unnest($1::bytea[], …).
@Suite struct BulkLoadTests {
    let db: TestDatabase
    let conn: PostgresConnection

    init() throws {
        db = try TestDatabase()
        conn = try db.connect()
        try conn.execute(
            """
            CREATE TABLE subs(channel int8 NOT NULL, kind int8 NOT NULL, token bytea NOT NULL,
                              registered_at_ms int8 NOT NULL, PRIMARY KEY (channel, kind, token));
            """)
    }

    func stored(channel: Int64) throws -> [[UInt8]] {
        try conn.query("SELECT token FROM subs WHERE channel = $1 ORDER BY token", [.int8(channel)])
            .map { try $0.bytea("token") }
    }

    @Test func copyInLoadsEveryRowInBinary() throws {
        let ts = tokens(10_000)
        let n = try conn.copyIn("COPY subs (channel, kind, token, registered_at_ms) FROM STDIN (FORMAT binary)") { w in
            for t in ts { try w.append([1, 0, .bytea(t), 1_700_000_000_000]) }
        }
        #expect(n == 10_000)
        #expect(try stored(channel: 1) == ts.sorted { $0.lexicographicallyPrecedes($1) })
    }

    @Test func unnestLoadsEveryRowAndSkipsDuplicates() throws {
        let ts = tokens(10_000, seed: 2)
        let sql = """
            INSERT INTO subs (channel, kind, token, registered_at_ms)
            SELECT $1, $2, t, $3 FROM unnest($4::bytea[]) AS t
            ON CONFLICT DO NOTHING
            """
        #expect(try conn.run(sql, [2, 0, 1_700_000_000_000, .array(ts.map(PostgresValue.bytea))]) == 10_000)
        #expect(try conn.run(sql, [2, 0, 1_700_000_000_000, .array(Array(ts.prefix(10)).map(PostgresValue.bytea))]) == 0)
        #expect(try stored(channel: 2) == ts.sorted { $0.lexicographicallyPrecedes($1) })
    }

    @Test func aDuplicateInACopyLoadsNothingAndCarries23505() throws {
        let ts = tokens(1000, seed: 3)
        let e = try #require(throws: PostgresError.self) {
            try conn.copyIn("COPY subs FROM STDIN (FORMAT binary)") { w in
                for t in ts + [ts[0]] { try w.append([3, 0, .bytea(t), 0]) }
            }
        }
        #expect(e.sqlState == .uniqueViolation)
        #expect(try conn.queryValue("SELECT count(*) FROM subs") == 0)
        #expect(try conn.queryValue("SELECT 1::int8") == 1)  // the session is ready again
    }

    @Test func aCopyWhoseBodyThrowsIsAbortedAndLoadsNothing() throws {
        #expect(throws: Planted.self) {
            try conn.copyIn("COPY subs FROM STDIN (FORMAT binary)") { w in
                for t in tokens(5000, seed: 4) { try w.append([4, 0, .bytea(t), 0]) }  // > one chunk sent
                throw Planted()
            }
        }
        #expect(try conn.queryValue("SELECT count(*) FROM subs") == 0)
        #expect(try conn.queryValue("SELECT 1::int8") == 1)
    }

    @Test func aCopyFieldOfTheWrongTypeIsRefusedByTheServer() throws {
        let e = try #require(throws: PostgresError.self) {
            try conn.copyIn("COPY subs FROM STDIN (FORMAT binary)") { w in try w.append([5, 0, .text("not bytes"), .bool(true)]) }
        }
        // A bool (1 byte) where an int8 (8 bytes) goes: the server cannot read the row.
        #expect(e.kind == .server)
        #expect(e.sqlState == .protocolViolation)
        #expect(try conn.queryValue("SELECT count(*) FROM subs") == 0)
    }
}
