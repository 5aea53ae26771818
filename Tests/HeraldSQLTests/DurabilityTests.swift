import Foundation
import Testing

@testable import HeraldSQL

@Suite struct DurabilityTests {
    let dir: TemporaryDirectory
    var path: String { dir.file("durable.db") }

    init() throws { dir = try TemporaryDirectory() }

    /// The files as they are on disk right after `write` returned — what a crash at that
    /// instant would leave (the -shm index is rebuilt from the WAL on open) — hold the row.
    @Test func returnedWriteIsInTheFilesAFreshConnectionOpens() throws {
        let db = try Database(path: path)
        try db.execute("CREATE TABLE event(id INTEGER PRIMARY KEY, body TEXT)")
        try db.write { try $0.run("INSERT INTO event(body) VALUES ('acknowledged')") }

        let crashed = try TemporaryDirectory()
        try FileManager.default.copyItem(atPath: path, toPath: crashed.file("copy.db"))
        try FileManager.default.copyItem(atPath: path + "-wal", toPath: crashed.file("copy.db-wal"))
        let fresh = try SQLiteConnection(path: crashed.file("copy.db"), readOnly: false)
        #expect(try fresh.queryValue("SELECT body FROM event") == "acknowledged")

        let sameFile = try SQLiteConnection(path: path, readOnly: true)
        #expect(try sameFile.queryValue("SELECT count(*) FROM event") == 1)
    }

    @Test func databaseFilesAreOwnerOnly() throws {
        let db = try Database(path: path)
        try db.execute("CREATE TABLE t(x)")
        #expect(try db.count("t") == 0)
        for suffix in ["", "-wal", "-shm"] {
            #expect(try permissions(path + suffix) == 0o600, "\(suffix)")
        }
    }

    /// SQLite removes the WAL only when the last connection to the file closes cleanly: a
    /// leaked connection (or a statement keeping one alive) would leave it behind.
    @Test func closeLeavesNoOpenHandleAndReopens() throws {
        do {
            let db = try Database(path: path)
            try db.execute("CREATE TABLE t(x)")
            try db.write { try $0.run("INSERT INTO t(x) VALUES (1)") }
            for _ in 0..<3 { _ = try db.count("t") }
            let reader = try db.openReader()
            _ = try reader.query("SELECT x FROM t")
            reader.close()
            #expect(FileManager.default.fileExists(atPath: path + "-wal"))
            db.close()
            #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
        }
        let db = try Database(path: path)
        #expect(try db.count("t") == 1)
    }
}
