import Testing

@testable import HeraldSQL

@Suite struct SQLiteConnectionTests {
    let dir: TemporaryDirectory
    let conn: SQLiteConnection

    init() throws {
        dir = try TemporaryDirectory()
        conn = try SQLiteConnection(path: dir.file("connection.db"))
        try conn.execute(
            """
            CREATE TABLE item(id INTEGER PRIMARY KEY, i INTEGER, r REAL, t TEXT, b BLOB);
            CREATE UNIQUE INDEX item_t ON item(t);
            """)
    }

    @Test func valuesRoundTripThroughEveryStorageClass() throws {
        let bytes: [UInt8] = [0, 1, 2, 0xfe, 0xff, 0]
        let cases: [[SQLValue]] = [
            [.integer(Int64.min), .real(-0.5), .text("héllo ✓ 日本"), .blob(bytes)],
            [.integer(Int64.max), .real(1e300), .text(""), .blob([])],
            [.null, .null, .null, .null],
        ]
        for (n, values) in cases.enumerated() {
            try conn.run("INSERT INTO item(id, i, r, t, b) VALUES (?, ?, ?, ?, ?)", [.int(n)] + values)
            let row = try #require(try conn.queryOne("SELECT i, r, t, b FROM item WHERE id = ?", [.int(n)]))
            #expect(row.values == values)
        }
        // An empty blob stays a blob and empty text stays text (not NULL).
        #expect(try conn.queryValue("SELECT typeof(b) || ',' || typeof(t) FROM item WHERE id = 1") == "blob,text")
    }

    @Test func typedBindsAndColumnReadersAgreeWithTheValues() throws {
        let statement = try conn.prepare("INSERT INTO item(i, r, t, b) VALUES (?, ?, ?, ?)")
        let token: [UInt8] = (0..<32).map { UInt8($0) }
        try statement.bind(1, int64: 42)
        try statement.bind(2, double: 2.5)
        try statement.bind(3, text: "x")
        try token.withUnsafeBytes { try statement.bind(4, blob: $0) }
        #expect(try statement.run() == 1)

        let select = try conn.prepare("SELECT i, r, t, b, NULL AS empty FROM item")
        #expect(try select.step())
        #expect(select.int64(0) == 42)
        #expect(select.double(1) == 2.5)
        #expect(select.text(2) == "x")
        #expect(select.blob(3) == token)
        #expect(select.withBlob(3) { $0.count } == 32)
        #expect(select.isNull(4) && !select.isNull(0))
        #expect(select.columnNames == ["i", "r", "t", "b", "empty"])
        #expect(try !select.step())
    }

    @Test func rowsAreReadByIndexAndByName() throws {
        try conn.run("INSERT INTO item(i, t) VALUES (7, 'seven')")
        let row = try #require(try conn.query("SELECT i AS number, t AS name FROM item").first)
        #expect(row[0] == 7)
        #expect(row["name"] == "seven")
        #expect(row["missing"] == nil)
    }

    @Test func uniqueViolationIsATypedConstraintError() throws {
        try conn.run("INSERT INTO item(t) VALUES ('a')")
        let error = #expect(throws: SQLiteError.self) { try conn.run("INSERT INTO item(t) VALUES ('a')") }
        #expect(error?.isConstraint == true)
        #expect(error?.isUniqueConstraint == true)
        #expect(error?.code == 19)  // SQLITE_CONSTRAINT
        #expect(error?.extendedCode == 2067)  // SQLITE_CONSTRAINT_UNIQUE
        #expect(error?.sql == "INSERT INTO item(t) VALUES ('a')")
    }

    @Test func prepareRefusesSeveralStatementsAndWrongArgumentCounts() throws {
        let several = #expect(throws: SQLiteError.self) { try conn.prepare("SELECT 1; SELECT 2") }
        #expect(several?.code == 21)  // SQLITE_MISUSE
        _ = try conn.prepare("SELECT 1; -- a trailing comment is fine")
        let arity = #expect(throws: SQLiteError.self) { try conn.run("SELECT ?, ?", [1]) }
        #expect(arity?.code == 21)
        let syntax = #expect(throws: SQLiteError.self) { try conn.prepare("SELEKT 1") }
        #expect(syntax?.code == 1)  // SQLITE_ERROR
    }

    @Test func cachedStatementsAreReusedWithFreshBindings() throws {
        let first = try conn.cached("SELECT ?")
        try first.bind(1, int64: 5)
        #expect(try first.step())
        let again = try conn.cached("SELECT ?")
        #expect(first === again)
        #expect(try again.step())
        #expect(again.isNull(0))  // reset and bindings cleared
    }

    @Test func transactionRollsBackWhenTheBodyThrows() throws {
        struct Refused: Error {}
        #expect(throws: Refused.self) {
            try conn.transaction {
                try conn.run("INSERT INTO item(t) VALUES ('gone')")
                throw Refused()
            }
        }
        #expect(try conn.queryValue("SELECT count(*) FROM item") == 0)
        #expect(!conn.isInTransaction)
    }

    @Test func nestedTransactionBecomesASavepoint() throws {
        struct Refused: Error {}
        try conn.transaction {
            try conn.run("INSERT INTO item(t) VALUES ('kept')")
            _ = try? conn.transaction {
                try conn.run("INSERT INTO item(t) VALUES ('undone')")
                throw Refused()
            }
        }
        #expect(try conn.query("SELECT t FROM item").map { $0[0] } == ["kept"])
    }

    @Test func readOnlyConnectionRefusesWritesWithIsReadOnly() throws {
        let reader = try SQLiteConnection(path: dir.file("connection.db"), readOnly: true)
        let error = #expect(throws: SQLiteError.self) { try reader.run("INSERT INTO item(t) VALUES ('no')") }
        #expect(error?.isReadOnly == true)
    }

    @Test func releasedStatementsAreFinalized() throws {
        let before = conn.unfinalizedStatementCount
        do {
            let statement = try conn.prepare("SELECT 1")
            #expect(try statement.step())
            #expect(conn.unfinalizedStatementCount == before + 1)
        }
        #expect(conn.unfinalizedStatementCount == before)
    }
}
