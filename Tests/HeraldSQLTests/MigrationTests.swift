import HeraldCore
import Testing

@testable import HeraldSQL

@Suite struct MigrationTests {
    let dir: TemporaryDirectory
    var path: String { dir.file("migrations.db") }
    let clock = ManualClock(1_700_000_000.25)

    init() throws { dir = try TemporaryDirectory() }

    /// Version 2 alters the table version 1 creates, so they only work in order.
    static let all = [
        Migration(version: 3, name: "index", sql: "CREATE INDEX channel_name ON channel(name);"),
        Migration(version: 1, name: "channel", sql: "CREATE TABLE channel(id INTEGER PRIMARY KEY, name TEXT);"),
        Migration(
            version: 2, name: "channel mode",
            sql: """
                ALTER TABLE channel ADD COLUMN mode TEXT NOT NULL DEFAULT 'fanout';
                INSERT INTO channel(name) VALUES ('seed');
                """),
    ]

    @Test func migrationsApplyInVersionOrderAndAreRecorded() throws {
        let db = try Database(path: path)
        #expect(try db.migrate(Self.all, clock: clock) == [1, 2, 3])
        let rows = try db.read { try $0.query("SELECT version, name, applied_at_ms FROM schema_migrations ORDER BY 1") }
        #expect(rows.map { $0[0] } == [1, 2, 3])
        #expect(rows.map { $0["name"] } == ["channel", "channel mode", "index"])
        #expect(rows.allSatisfy { $0[2] == .integer(1_700_000_000_250) })
        #expect(try db.read { try $0.queryValue("SELECT mode FROM channel") } == "fanout")
    }

    @Test func migrateIsIdempotentAcrossReopen() throws {
        do {
            let db = try Database(path: path)
            try db.migrate(Array(Self.all.prefix(2)), clock: clock)  // 3 and 1
            #expect(try db.appliedMigrations() == [1, 3])
        }
        let db = try Database(path: path)
        #expect(try db.migrate(Self.all, clock: clock) == [2])
        #expect(try db.migrate(Self.all, clock: clock) == [])
        #expect(try db.appliedMigrations() == [1, 2, 3])
        #expect(try db.count("channel") == 1)  // version 2's seed row, inserted once
    }

    @Test func databaseNewerThanTheBinaryIsRefused() throws {
        do { try Database(path: path).migrate(Self.all, clock: clock) }
        let db = try Database(path: path)
        let older = Self.all.filter { $0.version < 3 }
        let error = #expect(throws: DatabaseError.self) { try db.migrate(older, clock: clock) }
        #expect(error == .schemaNewerThanBinary(databaseVersion: 3, newestKnownVersion: 2))
        #expect(error?.description.contains("version 3") == true)
        #expect(error?.description.contains("version 2") == true)
        #expect(try db.appliedMigrations() == [1, 2, 3])
    }

    @Test func failingMigrationIsRolledBackAndLeavesEarlierOnesApplied() throws {
        let db = try Database(path: path)
        let broken = [
            Self.all[1],
            Migration(version: 2, name: "broken", sql: "CREATE TABLE half(x); INSERT INTO nowhere VALUES (1);"),
        ]
        let error = #expect(throws: SQLiteError.self) { try db.migrate(broken, clock: clock) }
        #expect(error?.sql?.contains("nowhere") == true)
        #expect(try db.appliedMigrations() == [1])
        #expect(try db.read { try $0.queryValue("SELECT count(*) FROM sqlite_schema WHERE name = 'half'") } == 0)
    }

    @Test func duplicateVersionsAreRefusedBeforeTouchingTheFile() throws {
        let db = try Database(path: path)
        let twice = [Self.all[1], Migration(version: 1, name: "again", sql: "SELECT 1;")]
        let error = #expect(throws: DatabaseError.self) { try db.migrate(twice, clock: clock) }
        #expect(error?.label == "invalid_migrations")
        #expect(try db.appliedMigrations() == [])
    }
}
