import Foundation
import HeraldCore
import HeraldSQL
import HeraldStore
import Testing

@testable import HeraldCLI

/// A count shared with a writer thread.
private final class Shared: Sendable {
    let batches = Locked(0)
    let stop = Locked(false)
    let failure = Locked<String?>(nil)
}

private func runCLI(_ args: [String], env: [String: String] = [:]) -> (code: Int32, out: String, err: String) {
    let console = Console(capture: true)
    let code = HeraldCLI.main(args, environment: env, console: console)
    return (code, console.capturedOutput, console.capturedError)
}

private func temporaryDirectory() throws -> String {
    let dir = NSTemporaryDirectory() + "herald-backup-\(UUID().uuidString)"
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    return dir
}

/// `n` fresh 32-byte tokens numbered from `first`.
private func tokens(from first: Int, count n: Int) -> [SubscriptionInput] {
    (first..<(first + n)).map { i in
        var bytes = [UInt8](repeating: 0xA5, count: 32)
        withUnsafeBytes(of: UInt64(i).bigEndian) { for (k, b) in $0.enumerated() { bytes[k] = b } }
        return SubscriptionInput(token: bytes, kind: .activity)
    }
}

@Suite struct BackupCommandTests {
    @Test func backupTakenWhileAnotherStoreWritesIsSoundAndHoldsWholeCommittedBatches() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let db = dir + "/herald.db"
        let store = try Store(path: db)
        defer { store.close() }
        _ = try store.createChannel(
            id: "match-1", bundleID: "com.example.app", mode: .fanout, environment: .sandbox, storagePolicy: .none,
            apnsChannelID: nil)
        let batch = 500
        let preloaded = 100
        for b in 0..<preloaded {
            _ = try store.batch(channelID: "match-1", subscribe: tokens(from: b * batch, count: batch), unsubscribe: [])
        }

        // A writer that keeps committing batches of new tokens until told to stop.
        let shared = Shared()
        shared.batches.withLock { $0 = preloaded }
        let firstWrite = DispatchSemaphore(value: 0)
        let writerDone = DispatchSemaphore(value: 0)
        let writer = Thread {
            var b = preloaded
            while !shared.stop.withLock({ $0 }) {
                do {
                    _ = try store.batch(channelID: "match-1", subscribe: tokens(from: b * batch, count: batch), unsubscribe: [])
                } catch {
                    shared.failure.withLock { $0 = "\(error)" }
                    break
                }
                b += 1
                shared.batches.withLock { $0 = b }
                if b == preloaded + 1 { firstWrite.signal() }
            }
            writerDone.signal()
        }
        writer.start()
        firstWrite.wait()  // the writer is running: the backup overlaps its commits

        let before = shared.batches.withLock { $0 }
        let copy = dir + "/copy.db"
        let result = runCLI(["backup", "--db", db, "--to", copy, "--json"])
        let after = shared.batches.withLock { $0 }
        // The writer keeps committing after the backup (nothing was left locked).
        let deadline = Date(timeIntervalSinceNow: 30)
        while shared.batches.withLock({ $0 }) < after + 1 && shared.failure.withLock({ $0 }) == nil && Date() < deadline {
            sched_yield()
        }
        let continued = shared.batches.withLock { $0 } > after
        shared.stop.withLock { $0 = true }
        writerDone.wait()
        #expect(continued)

        #expect(shared.failure.withLock { $0 } == nil)
        #expect(result.code == 0, "\(result.err)")
        let report = try JSON.parse(result.out)
        #expect(report["integrity"]?.stringValue == "ok")
        #expect(report["path"]?.stringValue == copy)
        let newest = Int64(Store.migrations.map { $0.version }.max() ?? 0)
        #expect(report["schema"]?.intValue == newest)
        #expect(report["channels"]?.intValue == 1)

        // One snapshot: whole batches only, at least those committed before it started.
        let c = try SQLiteConnection(path: copy, readOnly: true)
        let rows = try #require(try c.queryValue("SELECT count(*) FROM subscriptions")?.int64Value)
        #expect(try c.queryValue("PRAGMA integrity_check")?.textValue == "ok")
        #expect(try c.queryValue("PRAGMA journal_mode")?.textValue == "delete")
        c.close()
        #expect(report["subscriptions"]?.intValue == rows)
        #expect(rows % Int64(batch) == 0)
        #expect(rows >= Int64(before * batch) && rows <= Int64(after * batch), "rows \(rows), batches \(before)...\(after)")

        let attributes = try FileManager.default.attributesOfItem(atPath: copy)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        #expect(!FileManager.default.fileExists(atPath: copy + ".partial"))

        // The copy is a database Herald opens as is (a restore).
        let restored = try Store(path: copy)
        #expect(restored.isReady())
        restored.close()
    }

    @Test func aDirectoryDestinationGetsATimestampedFile() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let when = Date(timeIntervalSince1970: 1_767_225_600)  // 2026-01-01T00:00:00Z
        #expect(BackupCommand.destination(for: dir, now: when) == dir + "/herald-20260101-000000.db")
        #expect(BackupCommand.destination(for: dir + "/", now: when) == dir + "/herald-20260101-000000.db")
        #expect(BackupCommand.destination(for: dir + "/b.db", now: when) == dir + "/b.db")

        let db = dir + "/herald.db"
        try Store(path: db).close()
        let backups = dir + "/backups"
        try FileManager.default.createDirectory(atPath: backups, withIntermediateDirectories: true)
        let r = runCLI(["backup", "--to", backups], env: ["HERALD_DB": db])
        #expect(r.code == 0, "\(r.err)")
        let files = try FileManager.default.contentsOfDirectory(atPath: backups)
        #expect(files.count == 1)
        #expect(files.first.map { $0.hasPrefix("herald-") && $0.hasSuffix(".db") } == true)
    }

    @Test func refusesToOverwriteTheDatabaseOrToInventOne() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let db = dir + "/herald.db"
        let store = try Store(path: db)
        _ = try store.createChannel(
            id: "c", bundleID: "com.example.app", mode: .fanout, environment: .sandbox, storagePolicy: .none, apnsChannelID: nil)
        store.close()
        let size = try FileManager.default.attributesOfItem(atPath: db)[.size] as? NSNumber

        // The database itself, by another spelling of its path.
        let r = runCLI(["backup", "--db", db, "--to", dir + "/./herald.db"])
        #expect(r.code == 1)
        #expect(try FileManager.default.attributesOfItem(atPath: db)[.size] as? NSNumber == size)

        // A missing source is not created (opening it would make an empty database).
        let missing = dir + "/nothing.db"
        #expect(runCLI(["backup", "--db", missing, "--to", dir + "/out.db"]).code == 1)
        #expect(!FileManager.default.fileExists(atPath: missing))
        #expect(!FileManager.default.fileExists(atPath: dir + "/out.db"))

        // A file that is not SQLite.
        try Data("hk_admin_x\n".utf8).write(to: URL(fileURLWithPath: dir + "/token"))
        #expect(runCLI(["backup", "--db", dir + "/token", "--to", dir + "/out.db"]).code == 1)

        // A destination in a directory that does not exist.
        #expect(runCLI(["backup", "--db", db, "--to", dir + "/no/such/dir/out.db"]).code == 1)

        // Usage: --to is required.
        #expect(runCLI(["backup", "--db", db]).code == 2)
    }
}
