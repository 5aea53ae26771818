import Testing

@testable import HeraldSQL

@Suite struct SnapshotReadTests {
    @Test func readerKeepsItsSnapshotWhileTheWriterCommits() throws {
        let dir = try TemporaryDirectory()
        let db = try Database(path: dir.file("snapshot.db"))
        try db.execute("CREATE TABLE item(v INTEGER)")
        try db.write { try $0.run("INSERT INTO item(v) VALUES (1)") }

        try db.read { conn in
            let before = try conn.queryValue("SELECT count(*) FROM item")
            // The writer commits while this read transaction is open: it is not blocked...
            try db.write { try $0.run("INSERT INTO item(v) VALUES (2)") }
            // ...and this reader still sees the snapshot it started with.
            #expect(try conn.queryValue("SELECT count(*) FROM item") == before)
            #expect(before == 1)
        }
        #expect(try db.count("item") == 2)
    }

    @Test func longScanOnItsOwnConnectionSeesOneSnapshotAcrossBatches() throws {
        let dir = try TemporaryDirectory()
        let db = try Database(path: dir.file("scan.db"))
        try db.execute("CREATE TABLE item(id INTEGER PRIMARY KEY)")
        try db.write { conn in
            let insert = try conn.prepare("INSERT INTO item(id) VALUES (?)")
            for id in 1...1_000 {
                try insert.bind(1, int64: Int64(id))
                try insert.run()
            }
        }

        let scanner = try db.openReader()
        var seen = 0
        var last: Int64 = 0
        try scanner.transaction(.deferred) {
            while true {
                var batch = 0
                try scanner.forEachRow("SELECT id FROM item WHERE id > ? ORDER BY id LIMIT 100", [.integer(last)]) {
                    last = $0.int64(0)
                    batch += 1
                    return true
                }
                if batch == 0 { break }
                seen += batch
                // Rows committed mid-scan, before and after the cursor, are not seen.
                let cursor = last
                try db.write { try $0.run("INSERT INTO item(id) VALUES (?), (?)", [.integer(-cursor), .integer(cursor + 5_000)]) }
            }
        }
        #expect(seen == 1_000)
        #expect(try db.count("item") == 1_020)
    }
}
