import HeraldCore
import Testing

@testable import HeraldSQL

@Suite struct WriteQueueTests {
    @Test func fullQueueThrowsOverloadedAfterTheEnqueueTimeout() throws {
        let dir = try TemporaryDirectory()
        let options = DatabaseOptions(writeQueueCapacity: 2, enqueueTimeout: .milliseconds(100))
        let db = try Database(path: dir.file("queue.db"), options: options)
        try db.execute("CREATE TABLE item(v INTEGER)")

        let gate = try WriterGate(db)
        let queued = Outcomes<Int>()
        for i in 1...2 {
            try db.write({ try $0.run("INSERT INTO item(v) VALUES (?)", [.int(i)]) }, completion: queued.completion(i))
        }
        #expect(db.writeQueueDepth == 2)

        let start = Monotonic.nanos()
        #expect(throws: DatabaseError.overloaded(queueDepth: 2, capacity: 2)) {
            try db.write { try $0.run("INSERT INTO item(v) VALUES (3)") }
        }
        #expect(Monotonic.nanos() - start >= 100_000_000)
        // The non-blocking form never waits.
        #expect(throws: DatabaseError.overloaded(queueDepth: 2, capacity: 2)) {
            try db.write({ _ in 0 }, completion: { _ in })
        }

        gate.release()
        queued.wait()
        try db.write { try $0.run("INSERT INTO item(v) VALUES (4)") }
        #expect(try db.read { try $0.query("SELECT v FROM item ORDER BY v").map { $0[0] } } == [1, 2, 4])
    }

    @Test func queueDepthAndCountersAreExportedAsMetrics() throws {
        let dir = try TemporaryDirectory()
        let db = try Database(path: dir.file("metrics.db"))
        let registry = MetricsRegistry()
        db.registerMetrics(in: registry)
        let gate = try WriterGate(db)
        let queued = Outcomes<Int>()
        for i in 1...3 { try db.write({ _ in i }, completion: queued.completion(i)) }
        #expect(registry.render().contains("herald_queue_depth{queue=\"db_write\"} 3\n"))
        gate.release()
        queued.wait()
        let text = registry.render()
        #expect(text.contains("herald_queue_depth{queue=\"db_write\"} 0\n"))
        #expect(text.contains("herald_db_write_jobs_total 4\n"))
        #expect(text.contains("herald_db_commits_total 2\n"))
    }

    @Test func closeRunsQueuedWritesThenRefusesNewOnes() throws {
        let dir = try TemporaryDirectory()
        let db = try Database(path: dir.file("close.db"))
        try db.execute("CREATE TABLE item(v INTEGER)")
        let gate = try WriterGate(db)
        let queued = Outcomes<Int>()
        try db.write({ try $0.run("INSERT INTO item(v) VALUES (1)") }, completion: queued.completion(1))
        gate.release()
        db.close()
        #expect((try? queued[1]?.get()) == 1)
        #expect(throws: DatabaseError.closed) { try db.write { _ in 0 } }
        #expect(throws: DatabaseError.closed) { try db.read { _ in 0 } }
        db.close()  // idempotent

        let reopened = try Database(path: dir.file("close.db"))
        #expect(try reopened.count("item") == 1)
    }
}

extension Database {
    /// Runs DDL through the writer (test setup).
    func execute(_ sql: String) throws {
        try write { try $0.execute(sql) }
    }
}
