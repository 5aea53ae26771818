import Glibc
import Testing

@testable import HeraldPostgres

@Suite struct PostgresConnectionTests {
    let db: TestDatabase
    let conn: PostgresConnection

    init() throws {
        db = try TestDatabase()
        conn = try db.connect()
        try conn.execute(
            """
            CREATE TABLE item(id int8 PRIMARY KEY, i int8, s int2, n int4, t text, b bytea, f bool,
                              at timestamptz, d float8, v varchar(20));
            CREATE UNIQUE INDEX item_t ON item(t);
            """)
    }

    @Test func everyBindingTypeRoundTripsInBinary() throws {
        let bytes: [UInt8] = [0, 1, 2, 0xfe, 0xff, 0]
        let cases: [[PostgresValue]] = [
            [
                .int8(.min), .int(-32768), .int8(Int64(Int32.max)), .text("héllo ✓ 日本"), .bytea(bytes), true,
                .timestamp(1_700_000_000_123_456), .float8(-0.5), .text("v"),
            ],
            [
                .int8(.max), .int(32767), .int8(Int64(Int32.min)), .text(""), .bytea([]), false,
                .timestamp(-1), .float8(1e300), .text(""),
            ],
            [.null, .null, .null, .null, .null, .null, .null, .null, .null],
        ]
        for (n, values) in cases.enumerated() {
            try conn.run(
                "INSERT INTO item(id, i, s, n, t, b, f, at, d, v) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
                [.int(n)] + values)
            let row = try #require(try conn.queryOne("SELECT i, s, n, t, b, f, at, d, v FROM item WHERE id = $1", [.int(n)]))
            #expect(row.values == values)
        }
        // An empty bytea stays bytea and empty text stays text: not NULL.
        #expect(try conn.queryValue("SELECT (b IS NOT NULL AND t IS NOT NULL)::bool FROM item WHERE id = 1") == true)
        // The server read the binary values as the values, not as bytes of something else.
        #expect(
            try conn.queryValue(
                "SELECT (i::text || '|' || length(b)::text || '|' || to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US')) FROM item WHERE id = 0"
            )
                == .text("-9223372036854775808|6|2023-11-14 22:13:20.123456"))
    }

    @Test func arraysBindForUnnestAndAny() throws {
        let rows = try conn.query(
            "SELECT x, y FROM unnest($1::int8[], $2::text[]) AS u(x, y) ORDER BY x",
            [.array([3, 1, .null]), .array(["c", "a", "n"])])
        #expect(rows.map { $0["x"] } == [1, 3, .null])
        #expect(rows.map { $0["y"] } == ["a", "c", "n"])
        try conn.run(
            "INSERT INTO item(id, b) SELECT * FROM unnest($1::int8[], $2::bytea[])",
            [.array([10, 11]), .array([.bytea([1]), .bytea([2, 2])])])
        #expect(try conn.queryValue("SELECT count(*) FROM item WHERE b = ANY($1)", [.array([.bytea([2, 2])])]) == 1)
    }

    @Test func rowsAreReadByNameThroughTheColumnTable() throws {
        try conn.run("INSERT INTO item(id, t) VALUES (7, 'seven')")
        let row = try #require(try conn.queryOne("SELECT t AS name, id AS number FROM item"))
        #expect(try row.int64("number") == 7)
        #expect(try row.text("name") == "seven")
        #expect(row["missing"] == nil)
        #expect(throws: PostgresError.self) { try row.int64("missing") }
        #expect(throws: PostgresError.self) { try row.int64("name") }
    }

    @Test func aParameterThatDoesNotFitItsTypeIsAMisuse() throws {
        let e = try #require(throws: PostgresError.self) {
            try conn.run("INSERT INTO item(id, n) VALUES (1, $1)", [.int8(Int64(Int32.max) + 1)])
        }
        #expect(e.kind == .misuse)
        let wrongCount = try #require(throws: PostgresError.self) { try conn.run("INSERT INTO item(id) VALUES ($1)") }
        #expect(wrongCount.kind == .misuse)
        let wrongType = try #require(throws: PostgresError.self) {
            try conn.run("INSERT INTO item(id, b) VALUES (1, $1)", [.text("not bytes")])
        }
        #expect(wrongType.kind == .misuse)
    }

    @Test func aColumnOfATypeNotDecodedIsADecodingErrorNamingIt() throws {
        let e = try #require(throws: PostgresError.self) { try conn.query("SELECT 1.5::numeric AS amount") }
        #expect(e.kind == .decoding)
        #expect(e.message.contains("amount"))
        #expect(try conn.queryValue("SELECT 1.5::numeric::text") == "1.5")
    }

    @Test func errorsCarrySQLStateAndSeverity() throws {
        try conn.run("INSERT INTO item(id, t) VALUES (1, 'x')")
        let unique = try #require(throws: PostgresError.self) { try conn.run("INSERT INTO item(id, t) VALUES (2, 'x')") }
        #expect(unique.kind == .server)
        #expect(unique.sqlState == .uniqueViolation)
        #expect(unique.severity == "ERROR")
        #expect(unique.constraint == "item_t")
        let syntax = try #require(throws: PostgresError.self) { try conn.query("SELEKT 1") }
        #expect(syntax.sqlState == .syntaxError)
        let table = try #require(throws: PostgresError.self) { try conn.query("SELECT * FROM nowhere") }
        #expect(table.sqlState == .undefinedTable)
        // The session is fine after errors.
        #expect(try conn.queryValue("SELECT 1::int8") == 1)
    }

    @Test func preparedStatementsAreCachedPerConnection() throws {
        for i in 0..<5 { try conn.run("INSERT INTO item(id) VALUES ($1)", [.int(i)]) }
        #expect(conn.cache.count == 1)
        let prepared = try conn.queryValue("SELECT count(*) FROM pg_prepared_statements")
        #expect(prepared == .int8(Int64(conn.cache.count)))
    }

    @Test func theCacheEvictsBeyondItsCapacityAndDeallocates() throws {
        let small = try PostgresConnection(
            PostgresOptions(connection: try PostgresConnectionString(db.url), statementCacheCapacity: 3))
        for i in 0..<10 { _ = try small.queryValue("SELECT \(i)::int8") }
        #expect(small.cache.count == 3)
        #expect(try small.queryValue("SELECT count(*) FROM pg_prepared_statements") == 3)
    }

    @Test func aStatementOverTheTimeoutIsCancelledWith57014() throws {
        let quick = try db.connect(statementTimeout: .milliseconds(100))
        let clock = ContinuousClock()
        let start = clock.now
        let e = try #require(throws: PostgresError.self) { try quick.query("SELECT pg_sleep(5)") }
        #expect(e.sqlState == .queryCanceled)
        #expect(clock.now - start < .seconds(3))
        #expect(try quick.queryValue("SELECT 2::int8") == 2)
    }

    @Test func aServerThatNeverAnswersFailsAtTheConnectTimeout() throws {
        // A loopback listener that never accepts: the TCP handshake completes (backlog), the
        // startup message gets no answer, and only connect_timeout ends the wait.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        try #require(withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } } == 0)
        try #require(listen(fd, 8) == 0)
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        let port = UInt16(bigEndian: addr.sin_port)
        let clock = ContinuousClock()
        let start = clock.now
        let e = try #require(throws: PostgresError.self) {
            try PostgresConnection(
                PostgresOptions(
                    connection: try PostgresConnectionString("postgresql://herald@127.0.0.1:\(port)/x"),
                    connectTimeout: .seconds(2)))
        }
        let waited = clock.now - start
        #expect(e.kind == .connection)
        #expect(waited >= .milliseconds(1900))
        #expect(waited < .seconds(6))
    }

    @Test func anUnreachableServerFailsWithinTheConnectTimeout() throws {
        // A TCP port on loopback that nobody listens on: refused at once.
        let clock = ContinuousClock()
        let start = clock.now
        let e = try #require(throws: PostgresError.self) {
            try PostgresConnection(
                PostgresOptions(
                    connection: try PostgresConnectionString("postgresql://herald@127.0.0.1:1/x"),
                    connectTimeout: .seconds(2)))
        }
        #expect(e.kind == .connection)
        #expect(clock.now - start < .seconds(5))
    }
}
