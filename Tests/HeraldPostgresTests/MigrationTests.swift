import HeraldCore
import Testing

@testable import HeraldPostgres

@Suite struct MigrationTests {
    let db: TestDatabase

    init() throws { db = try TestDatabase() }

    @Test func heraldsSchemaAppliesOnceAndIsRecorded() throws {
        let conn = try db.connect()
        #expect(try conn.appliedMigrations() == [])
        #expect(try conn.migrate() == PostgresMigration.herald.map(\.version))
        #expect(try conn.migrate() == [])
        #expect(try conn.appliedMigrations() == PostgresMigration.herald.map(\.version))
        for table in ["channels", "subscriptions", "events", "checkpoints", "api_keys", "leases"] {
            #expect(try conn.queryValue("SELECT to_regclass($1) IS NOT NULL", [.text(table)]) == true, "\(table)")
        }
    }

    @Test func aDatabaseNewerThanTheBinaryIsRefusedAndNothingApplied() throws {
        let conn = try db.connect()
        try conn.migrate([
            PostgresMigration(version: 1, name: "a", sql: "CREATE TABLE a(x int8)"),
            PostgresMigration(version: 2, name: "b", sql: "CREATE TABLE b(x int8)"),
        ])
        #expect(throws: PostgresMigrationError.schemaNewerThanBinary(databaseVersion: 2, newestKnownVersion: 1)) {
            try conn.migrate([PostgresMigration(version: 1, name: "a", sql: "CREATE TABLE a(x int8)")])
        }
    }

    @Test func aFailingMigrationIsRolledBackWithItsRecord() throws {
        let conn = try db.connect()
        let e = try #require(throws: PostgresError.self) {
            try conn.migrate([PostgresMigration(version: 1, name: "bad", sql: "CREATE TABLE ok(x int8); CREATE TABLE ok(x int8);")])
        }
        #expect(e.sqlState == SQLState("42P07"))  // duplicate table
        #expect(try conn.appliedMigrations() == [])
        #expect(try conn.queryValue("SELECT to_regclass('ok') IS NOT NULL") == false)
    }

    @Test func workersMigratingAtOnceApplyEachVersionOnce() throws {
        let results = Locked<[[Int]]>([])
        let failures = Locked<[String]>([])
        let db = self.db
        onThreads(3) { _ in
            do {
                let applied = try db.connect().migrate()
                results.withLock { $0.append(applied) }
            } catch { failures.withLock { $0.append("\(error)") } }
        }
        #expect(failures.withLock { $0 } == [])
        let applied = results.withLock { $0 }
        #expect(applied.sorted { $0.count > $1.count } == [PostgresMigration.herald.map(\.version), [], []])
    }
}
