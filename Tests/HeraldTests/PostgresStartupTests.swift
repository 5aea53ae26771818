import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import Testing

/// `herald serve` started against a PostgreSQL database it must not run on: no schema, a
/// schema behind this binary, one ahead of it, no server at all. Each is a real `herald`
/// process that exits 1 with a sentence saying what to do, without touching the database.
@Suite struct PostgresStartupTests {
    /// `herald args…` with a deadline: a `serve` that starts when it should have refused is
    /// killed and reported (status nil), not waited for forever.
    static func run(_ args: [String], env: [String: String] = [:], timeout: Double = 30) throws -> (
        status: Int32?, out: String, err: String
    ) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: ServeProcess.binary)
        p.arguments = args
        var e = ProcessInfo.processInfo.environment
        e["SWIFT_BACKTRACE"] = "enable=no"
        for (k, v) in env { e[k] = v }
        p.environment = e
        let dir = NSTemporaryDirectory() + "herald-start-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        p.currentDirectoryURL = URL(fileURLWithPath: dir)
        let out = dir + "/out"
        let err = dir + "/err"
        FileManager.default.createFile(atPath: out, contents: nil)
        FileManager.default.createFile(atPath: err, contents: nil)
        p.standardOutput = FileHandle(forWritingAtPath: out)
        p.standardError = FileHandle(forWritingAtPath: err)
        try p.run()
        let deadline = Date(timeIntervalSinceNow: timeout)
        while p.isRunning && Date() < deadline { usleep(20_000) }
        let timedOut = p.isRunning
        if timedOut { kill(p.processIdentifier, SIGKILL) }
        p.waitUntilExit()
        let text = { (path: String) in (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }
        return (timedOut ? nil : p.terminationStatus, text(out), text(err))
    }

    static let serveArgs = ["serve", "--listen", "127.0.0.1:0", "--admin-token", "hk_admin_" + String(repeating: "s", count: 40)]

    static func applied(_ url: String) throws -> [Int] {
        let c = try PostgresConnection(PostgresOptions(connection: try PostgresConnectionString(url)))
        defer { c.close() }
        return try c.appliedMigrations()
    }

    @Test func serveOnAnEmptyDatabaseRefusesAndSaysToRunMigrate() throws {
        let url = try PostgresCluster.shared().makeDatabase("empty")
        for args in [Self.serveArgs, ["serve", "--check-config"]] {
            let r = try Self.run(args + ["--db", url])
            #expect(r.status == 1, "\(args): \(r.err)")
            #expect(r.err.contains("has no Herald schema") && r.err.contains("herald migrate"), "\(r.err)")
            #expect(!r.err.contains("password"))
        }
        // Nothing was created: the refusal is a read.
        #expect(try Self.applied(url) == [])
        // Migrated, the database passes the check (its only problem left: no APNs key here).
        #expect(try Self.run(["migrate", "--db", url]).status == 0)
        let check = try Self.run(["serve", "--check-config", "--db", url])
        #expect(!check.err.contains("database"), "\(check.err)")
        #expect(check.err.contains("no APNs credentials"), "\(check.err)")
    }

    @Test func serveOnASchemaBehindTheBinaryRefusesAndSaysToRunMigrate() throws {
        let url = try PostgresCluster.shared().makeDatabase("behind")
        let c = try PostgresConnection(PostgresOptions(connection: try PostgresConnectionString(url)))
        try c.migrate(Array(PostgresMigration.herald.prefix(1)))
        c.close()
        let missing = PostgresMigration.herald.dropFirst().map { String($0.version) }.joined(separator: ", ")
        let r = try Self.run(Self.serveArgs + ["--db", url])
        #expect(r.status == 1, "\(r.err)")
        #expect(r.err.contains("lacks migrations \(missing)") && r.err.contains("herald migrate"), "\(r.err)")
        #expect(try Self.applied(url) == [1])
    }

    @Test func serveOnASchemaAheadOfTheBinaryRefuses() throws {
        let url = try PostgresCluster.shared().makeDatabase("ahead")
        #expect(try Self.run(["migrate", "--db", url]).status == 0)
        let c = try PostgresConnection(PostgresOptions(connection: try PostgresConnectionString(url)))
        try c.run("INSERT INTO schema_migrations (version, name) VALUES (999, 'future')")
        c.close()
        for args in [Self.serveArgs, ["serve", "--check-config"], ["migrate"]] {
            let r = try Self.run(args + ["--db", url])
            #expect(r.status == 1 && r.err.contains("schema version 999, newer than this herald"), "\(args): \(r.err)")
        }
    }

    /// Migration 8 moves subscriptions between shards: `herald migrate` refuses while a
    /// worker is alive, says why, exits 1 and applies nothing; with the worker gone it runs.
    @Test func migrateToFortyEightShardsRefusesWhileAWorkerRuns() throws {
        let url = try PostgresCluster.shared().makeDatabase("reshard")
        let c = try PostgresConnection(PostgresOptions(connection: try PostgresConnectionString(url)))
        defer { c.close() }
        try c.migrate(PostgresMigration.herald.filter { $0.version <= 7 })
        try c.run("INSERT INTO workers (id, expires_at) VALUES ('w_old', clock_timestamp() + interval '1 minute')")
        let r = try Self.run(["migrate", "--db", url])
        #expect(r.status == 1, "\(r.err)")
        #expect(r.err.contains("herald serve is running against this database") && r.err.contains("stop every worker"), "\(r.err)")
        #expect(try Self.applied(url) == Array(1...7))
        try c.run("DELETE FROM workers")
        #expect(try Self.run(["migrate", "--db", url]).status == 0)
        #expect(try Self.applied(url) == PostgresMigration.herald.map(\.version))
    }

    @Test func serveWithNoServerAtTheURLSaysSoAndExits() throws {
        // A socket directory with no server in it: libpq fails at once.
        let dir = NSTemporaryDirectory() + "herald-nopg-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let url = "postgresql://herald@/herald?host=\(dir)"
        let start = Date()
        let r = try Self.run(Self.serveArgs + ["--db", url])
        #expect(r.status == 1, "\(r.err)")
        #expect(r.err.contains("PostgreSQL unreachable"), "\(r.err)")
        #expect(Date().timeIntervalSince(start) < 20)
    }
}
