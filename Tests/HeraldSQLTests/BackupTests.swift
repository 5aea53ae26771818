import Synchronization
import Testing

@testable import HeraldSQL

@Suite struct BackupTests {
    @Test func backupWhileWritingIsSoundOwnerOnlyAndHasTheRows() throws {
        let dir = try TemporaryDirectory()
        let db = try Database(path: dir.file("live.db"))
        try db.execute("CREATE TABLE item(id INTEGER PRIMARY KEY, payload BLOB)")
        try db.write { conn in
            for _ in 0..<5_000 { try conn.run("INSERT INTO item(payload) VALUES (randomblob(64))") }
        }

        // A writer keeps committing for as long as the backup runs.
        let stop = Atomic<Bool>(false)
        let writing = startThreads(1) { [db] _ in
            while !stop.load(ordering: .relaxed) {
                _ = try? db.write { try $0.run("INSERT INTO item(payload) VALUES (randomblob(64))") }
            }
        }
        let target = dir.file("backup.db")
        try db.backup(to: target)
        stop.store(true, ordering: .relaxed)
        writing.wait()

        #expect(try permissions(target) == 0o600)
        let copy = try SQLiteConnection(path: target, readOnly: true)
        #expect(try copy.queryValue("PRAGMA integrity_check") == "ok")
        let rows = try #require(try copy.queryValue("SELECT count(*) FROM item")?.int64Value)
        #expect(rows >= 5_000)
        #expect(rows <= Int64(try db.count("item")))
    }
}
