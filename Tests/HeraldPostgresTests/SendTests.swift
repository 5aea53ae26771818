import Testing

@testable import HeraldPostgres

/// One query in flight (`send` now, `receive` later): its rows arrive as `query`'s would,
/// an error is thrown by `receive` and leaves the session usable, and a statement run before
/// it is read takes its answer away.
@Suite struct SendTests {
    let db: TestDatabase

    init() throws { db = try TestDatabase() }

    @Test func aSentQueryIsReadLaterAndItsErrorLeavesTheSessionUsable() throws {
        let c = try db.connect()
        defer { c.close() }
        let sql = "SELECT g AS n, $2::bytea AS b FROM generate_series(1, $1::int8) AS g"
        let rows = try c.receive(try c.send(sql, [.int8(3000), .bytea([1, 2])]))
        #expect(try rows.map { try $0.int64("n") } == (1...3000).map(Int64.init))
        #expect(try rows.allSatisfy { try $0.bytea("b") == [1, 2] })
        // Prepared once: sent again, the same statement.
        #expect(try c.receive(try c.send(sql, [.int8(2), .bytea([])])).count == 2)

        let failing = try c.send("SELECT 1 / ($1::int8 - 1) AS x", [.int8(1)])
        let e = try #require(throws: PostgresError.self) { try c.receive(failing) }
        #expect(e.sqlState == SQLState("22012"), "\(e)")
        #expect(try c.queryValue("SELECT 7")?.int64Value == 7)
        #expect(throws: PostgresError.self) { try c.send("SELEKT 1") }
        #expect(try c.queryValue("SELECT 8")?.int64Value == 8)
        // A statement run before a sent one is read takes its answer away (libpq drains it):
        // `receive` then has nothing to read.
        let dropped = try c.send(sql, [.int8(5), .bytea([])])
        #expect(try c.queryValue("SELECT 9")?.int64Value == 9)
        #expect(throws: PostgresError.self) { try c.receive(dropped) }
        #expect(try c.queryValue("SELECT 10")?.int64Value == 10)
    }
}
