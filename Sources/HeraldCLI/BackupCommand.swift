import Foundation
import HeraldCore
import HeraldSQL

/// `herald backup --to FILE`: a consistent copy of the database taken with SQLite's online
/// backup API while `herald serve` keeps running (WAL: the copy reads one committed
/// snapshot, the server's writes go on), then opened and checked with
/// `PRAGMA integrity_check`.
enum BackupCommand: HeraldCommand {
    static let name = "backup"
    static let summary = "copy the database while the server runs (SQLite online backup), verified"
    static let help = """
        Usage: herald backup --to FILE [--db PATH] [--json]

        Copies the database with SQLite's online backup API: one committed snapshot, taken
        while `herald serve` keeps running and writing. The copy is written beside FILE,
        made mode 0600, fsynced and renamed over FILE only when complete, then checked with
        PRAGMA integrity_check. It is one self-contained file (no -wal): to restore, stop
        Herald and copy it over the database.

        Run it as the user the server runs as (the database is readable by that user only).

          --to FILE    where to write the copy; an existing directory gets
                       herald-YYYYMMDD-HHMMSS.db (UTC) inside it. An existing file is replaced.
          --db PATH    the database (env HERALD_DB, default ./herald.db)
          --json       print the result as JSON

        Exit codes: 0 copied and sound, 1 failed (or the copy failed its integrity check:
        the file is left for inspection), 2 usage.

        Example:
          sudo -u herald herald backup --db /var/lib/herald/herald.db --to /var/backups/herald/
        """

    /// What a backup produced.
    struct Report: Sendable, Equatable {
        var source: String
        var path: String
        var bytes: Int64
        var seconds: Double
        /// "ok", or SQLite's findings one per line.
        var integrity: String
        /// The newest migration recorded in the copy (0: none).
        var schema: Int
        /// Rows of Herald's main tables in the copy (absent tables count 0).
        var channels: Int64
        var subscriptions: Int64
        var events: Int64

        var isSound: Bool { integrity == "ok" }

        var json: JSON {
            .object([
                ("source", .string(source)), ("path", .string(path)), ("bytes", .int(bytes)),
                ("seconds", .double((seconds * 1000).rounded() / 1000)), ("integrity", .string(integrity)),
                ("schema", .int(Int64(schema))), ("channels", .int(channels)),
                ("subscriptions", .int(subscriptions)), ("events", .int(events)),
            ])
        }
    }

    static func run(_ args: inout Arguments, console: Console) throws -> Int32 {
        let db = try args.option("--db", env: "HERALD_DB", default: "./herald.db")
        if StorageTarget(db).isPostgres {
            throw CommandFailure(
                "\(StorageTarget(db).display) is PostgreSQL: back it up with pg_dump or the server's continuous archiving (PITR); herald backup copies SQLite files"
            )
        }
        guard let to = try args.option("--to"), !to.isEmpty else { throw UsageError("--to FILE is required") }
        let json = args.flag("--json")
        try args.finish()
        let report = try backup(db: db, to: to)
        if json {
            console.print(TextOutput.prettyJSON(report.json))
        } else {
            console.print(
                TextOutput.fields([
                    ("backup", "\(report.path) (\(byteSize(report.bytes)))"),
                    ("source", report.source),
                    ("integrity", report.isSound ? "ok" : "FAILED"),
                    ("schema", String(report.schema)),
                    (
                        "contents",
                        "\(TextOutput.count(report.channels)) channels, "
                            + "\(TextOutput.count(report.subscriptions)) subscriptions, \(TextOutput.count(report.events)) events"
                    ),
                    ("took", TextOutput.duration(report.seconds)),
                ]))
        }
        guard report.isSound else {
            console.error(
                "herald backup: the copy \(report.path) failed PRAGMA integrity_check:\n\(report.integrity)\n"
                    + "The source may be damaged: run `sqlite3 \(db) 'PRAGMA integrity_check'` and keep earlier backups.")
            return ExitCode.failure
        }
        return ExitCode.ok
    }

    /// Copies `db` to `to` (a file, or a directory to name a file in) and verifies the copy.
    /// Throws `CommandFailure` naming what went wrong; an unsound copy is a report, not an
    /// error. Blocks the calling thread for as long as copying the file takes.
    static func backup(db: String, to: String, now: Date = Date()) throws -> Report {
        try checkSource(db)
        let path = destination(for: to, now: now)
        try checkDestination(path, source: db)
        let started = Monotonic.nanos()
        let database: Database
        do {
            database = try Database(path: db, options: DatabaseOptions())
        } catch {
            throw CommandFailure("cannot open the database \(db): \(error)")
        }
        do {
            defer { database.close() }
            try database.backup(to: path)
        } catch {
            throw CommandFailure("the backup to \(path) failed: \(error)")
        }
        var report = Report(
            source: db, path: path, bytes: 0, seconds: 0, integrity: "", schema: 0, channels: 0, subscriptions: 0, events: 0)
        do {
            try verify(path, into: &report)
        } catch {
            throw CommandFailure("the backup \(path) was written but cannot be read back: \(error)")
        }
        report.seconds = Double(Monotonic.nanos() - started) / 1e9
        report.bytes = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value ?? 0
        return report
    }

    /// The file to write: `to` itself, or a timestamped name inside it when it is a directory.
    static func destination(for to: String, now: Date) -> String {
        var isDirectory: ObjCBool = false
        guard to.hasSuffix("/") || (FileManager.default.fileExists(atPath: to, isDirectory: &isDirectory) && isDirectory.boolValue)
        else { return to }
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "UTC")
        f.dateFormat = "yyyyMMdd-HHmmss"
        return (to.hasSuffix("/") ? to : to + "/") + "herald-\(f.string(from: now)).db"
    }

    /// The source must be an existing SQLite file: opening a missing path would create an
    /// empty database and back that up.
    static func checkSource(_ db: String) throws {
        guard let handle = FileHandle(forReadingAtPath: db) else {
            throw CommandFailure(
                FileManager.default.fileExists(atPath: db)
                    ? "cannot read the database \(db) (run as the user herald serve runs as)"
                    : "no database at \(db) (--db or HERALD_DB)")
        }
        defer { try? handle.close() }
        let header = (try? handle.read(upToCount: 16)) ?? Data()
        guard header == Data("SQLite format 3\0".utf8) else { throw CommandFailure("\(db) is not an SQLite database") }
    }

    /// Refuses to write over the database or its -wal/-shm files, or into a missing directory.
    static func checkDestination(_ path: String, source: String) throws {
        let directory = (path as NSString).deletingLastPathComponent
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory.isEmpty ? "." : directory, isDirectory: &isDirectory),
            isDirectory.boolValue
        else { throw CommandFailure("the directory \(directory) does not exist") }
        let protected = [source, source + "-wal", source + "-shm"].compactMap(fileIdentity)
        if let target = fileIdentity(path), protected.contains(where: { $0 == target }) {
            throw CommandFailure("\(path) is the database itself (or its -wal/-shm file): choose another --to")
        }
    }

    /// Device and inode of an existing file (so two spellings of one path compare equal).
    private static func fileIdentity(_ path: String) -> [UInt64]? {
        var s = stat()
        guard stat(path, &s) == 0 else { return nil }
        return [UInt64(s.st_dev), UInt64(s.st_ino)]
    }

    /// Makes the copy a single rollback-journal file (no -wal to carry along), then checks it
    /// and counts what it holds.
    static func verify(_ path: String, into report: inout Report) throws {
        let c = try SQLiteConnection(path: path, create: false)
        defer { c.close() }
        _ = try c.query("PRAGMA journal_mode = DELETE")
        report.integrity = try c.query("PRAGMA integrity_check").map { $0[0].textValue ?? "" }.joined(separator: "\n")
        let tables = Set(try c.query("SELECT name FROM sqlite_schema WHERE type = 'table'").compactMap { $0[0].textValue })
        func count(_ table: String) throws -> Int64 {
            guard tables.contains(table) else { return 0 }
            return try c.queryValue("SELECT count(*) FROM \(table)")?.int64Value ?? 0
        }
        report.schema =
            tables.contains("schema_migrations")
            ? Int(try c.queryValue("SELECT max(version) FROM schema_migrations")?.int64Value ?? 0) : 0
        report.channels = try count("channels")
        report.subscriptions = try count("subscriptions")
        report.events = try count("events")
    }

    /// 12345678 → "12.3 MB" (decimal units, as `ls -h --si` and disk vendors count).
    static func byteSize(_ n: Int64) -> String {
        let units = ["bytes", "kB", "MB", "GB", "TB"]
        var v = Double(n)
        var i = 0
        while v >= 1000 && i < units.count - 1 {
            v /= 1000
            i += 1
        }
        return i == 0 ? "\(n) bytes" : String(format: "%.1f", v) + " " + units[i]
    }
}
