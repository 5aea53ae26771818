import Testing

@testable import HeraldSQL

@Suite struct DiskFullTests {
    /// `PRAGMA max_page_count` on the writer connection stands in for a full disk: SQLite
    /// reports SQLITE_FULL exactly as it does for ENOSPC.
    @Test func diskFullFailsTheWriteLeavesNothingAndRecoversOnceSpaceReturns() throws {
        let dir = try TemporaryDirectory()
        let db = try Database(path: dir.file("disk-full.db"))
        try db.execute("CREATE TABLE item(id INTEGER PRIMARY KEY, payload BLOB NOT NULL)")
        try db.write { try $0.run("INSERT INTO item(payload) VALUES (zeroblob(10))") }
        try db.write { conn in
            let pages = try conn.queryValue("PRAGMA page_count")?.int64Value ?? 0
            try conn.execute("PRAGMA max_page_count = \(pages)")
        }

        // Many rows in one job: the first ones fit in free space, then the file must grow.
        let insertMany: @Sendable (SQLiteConnection) throws -> Void = { conn in
            for _ in 0..<50 { try conn.run("INSERT INTO item(payload) VALUES (zeroblob(2000))") }
        }
        let error = #expect(throws: SQLiteError.self) { try db.write(insertMany) }
        #expect(error?.isDiskFull == true)
        #expect(try db.count("item") == 1)  // nothing of the failed write

        // A batch with a small job and the big one: whatever each was told is the truth.
        let gate = try WriterGate(db)
        let outcomes = Outcomes<Void>()
        try db.write({ try $0.run("INSERT INTO item(id, payload) VALUES (100, x'01')") }, completion: outcomes.completion(1))
        try db.write(insertMany, completion: outcomes.completion(2))
        gate.release()
        outcomes.wait()
        #expect(throws: SQLiteError.self) { try outcomes[2]?.get() }
        let smallSucceeded = (try? outcomes[1]?.get()) != nil
        #expect(try db.count("item") == (smallSucceeded ? 2 : 1))

        try db.write { try $0.execute("PRAGMA max_page_count = 1073741823") }
        try db.write(insertMany)
        #expect(try db.count("item") == (smallSucceeded ? 52 : 51))
        #expect(try db.integrityCheck() == "ok")
    }
}
