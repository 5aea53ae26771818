import Dispatch
import Testing

@testable import HeraldSQL

@Suite struct GroupCommitTests {
    let dir: TemporaryDirectory
    let db: Database

    init() throws {
        dir = try TemporaryDirectory()
        db = try Database(path: dir.file("group-commit.db"))
        try db.migrate([
            Migration(
                version: 1, name: "tables",
                sql: """
                    CREATE TABLE item(id INTEGER PRIMARY KEY, v INTEGER NOT NULL);
                    CREATE TABLE parent(id INTEGER PRIMARY KEY);
                    CREATE TABLE child(id INTEGER PRIMARY KEY,
                        parent_id INTEGER REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED);
                    """)
        ])
    }

    @Test func concurrentWritersShareCommits() throws {
        let before = db.writeStats
        let gate = try WriterGate(db)
        let outcomes = Outcomes<Int64>()
        let threads = startThreads(200) { [db] i in
            outcomes.record(
                i,
                Result {
                    try db.write { conn in
                        try conn.run("INSERT INTO item(v) VALUES (?)", [.int(i)])
                        return conn.lastInsertRowID
                    }
                })
        }
        #expect(db.waitForWriteQueueDepth(atLeast: 200))
        gate.release()
        threads.wait()

        let results = outcomes.all
        #expect(results.count == 200)
        #expect(results.values.allSatisfy { (try? $0.get()) != nil })
        #expect(Set(results.values.compactMap { try? $0.get() }).count == 200)
        #expect(try db.count("item") == 200)
        let after = db.writeStats
        #expect(after.jobs - before.jobs == 201)
        #expect(after.commits - before.commits == 2)  // the gate's batch, then all 200 at once
    }

    @Test func throwingJobRollsBackOnlyItself() throws {
        struct Refused: Error, Equatable {}
        let before = db.writeStats
        let gate = try WriterGate(db)
        let outcomes = Outcomes<Int>()
        try db.write({ try $0.run("INSERT INTO item(v) VALUES (1)") }, completion: outcomes.completion(1))
        try db.write(
            { conn in
                try conn.run("INSERT INTO item(v) VALUES (2)")
                throw Refused()
            }, completion: outcomes.completion(2))
        try db.write({ try $0.run("INSERT INTO item(v) VALUES (3)") }, completion: outcomes.completion(3))
        gate.release()
        outcomes.wait()

        #expect((try? outcomes[1]?.get()) == 1)
        #expect(throws: Refused.self) { try outcomes[2]?.get() }
        #expect((try? outcomes[3]?.get()) == 1)
        #expect(try db.read { try $0.query("SELECT v FROM item ORDER BY v").map { $0[0] } } == [1, 3])
        #expect(db.writeStats.commits - before.commits == 2)  // the three shared one commit
        #expect(db.writeStats.failedJobs - before.failedJobs == 1)
    }

    @Test func failedCommitFailsEveryJobOfTheBatchAndLeavesNothing() throws {
        let before = db.writeStats
        let gate = try WriterGate(db)
        let outcomes = Outcomes<Int>()
        try db.write({ try $0.run("INSERT INTO parent(id) VALUES (1)") }, completion: outcomes.completion(1))
        // A deferred foreign key is checked only at COMMIT: the job succeeds, the COMMIT fails.
        try db.write({ try $0.run("INSERT INTO child(parent_id) VALUES (99)") }, completion: outcomes.completion(2))
        gate.release()
        outcomes.wait()

        for key in [1, 2] {
            let error = #expect(throws: SQLiteError.self) { try outcomes[key]?.get() }
            #expect(error?.isConstraint == true)
        }
        #expect(try db.count("parent") == 0)
        #expect(try db.count("child") == 0)
        #expect(db.writeStats.failedCommits - before.failedCommits == 1)

        // The writer keeps going.
        try db.write { try $0.run("INSERT INTO parent(id) VALUES (2)") }
        #expect(try db.count("parent") == 1)
    }

    @Test func blockingWriteFromInsideAJobIsRefused() throws {
        let label = try db.write { [db] _ in
            do {
                _ = try db.write { _ in 1 }
                return "nested write ran"
            } catch let error as DatabaseError {
                return error.label
            }
        }
        #expect(label == "write_from_writer_thread")
    }

    @Test func asyncWriteReturnsTheCommittedResult() async throws {
        let id = try await db.write { conn in
            try conn.run("INSERT INTO item(v) VALUES (5)")
            return conn.lastInsertRowID
        }
        #expect(try db.read { try $0.queryValue("SELECT v FROM item WHERE id = ?", [.integer(id)]) } == 5)
    }

    @Test func unbatchedWriteThatLeavesATransactionOpenIsRolledBack() throws {
        #expect(throws: DatabaseError.transactionLeftOpen) {
            try db.writeUnbatched { conn in
                try conn.execute("BEGIN; INSERT INTO item(v) VALUES (9);")
            }
        }
        #expect(try db.count("item") == 0)
        try db.writeUnbatched { try $0.execute("PRAGMA wal_checkpoint(TRUNCATE)") }
    }
}
