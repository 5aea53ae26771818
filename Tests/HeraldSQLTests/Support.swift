import Dispatch
import Foundation
import HeraldCore

@testable import HeraldSQL

/// Holds the writer thread inside a job until `release()`, so a test can queue jobs
/// behind it and know exactly which ones the next batch holds.
final class WriterGate: Sendable {
    private let entered = DispatchSemaphore(value: 0)
    private let gate = DispatchSemaphore(value: 0)

    /// Queues the blocking job and returns once the writer is inside it.
    init(_ db: Database) throws {
        try db.write(
            { [entered, gate] _ in
                entered.signal()
                gate.wait()
            }, completion: { _ in })
        entered.wait()
    }

    func release() { gate.signal() }
}

/// Outcomes gathered from several threads.
final class Outcomes<T: Sendable>: Sendable {
    private let items = Locked<[Int: Result<T, any Error>]>([:])
    let group = DispatchGroup()

    func record(_ key: Int, _ result: Result<T, any Error>) {
        items.withLock { $0[key] = result }
    }

    /// A completion for `Database.write(_:completion:)` that records under `key`.
    func completion(_ key: Int) -> @Sendable (Result<T, any Error>) -> Void {
        group.enter()
        return { result in
            self.record(key, result)
            self.group.leave()
        }
    }

    func wait() { group.wait() }

    subscript(key: Int) -> Result<T, any Error>? { items.withLock { $0[key] } }
    var all: [Int: Result<T, any Error>] { items.withLock { $0 } }
}

/// Starts `count` threads (not the cooperative pool: they block) running `body(i)`.
func startThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) -> DispatchGroup {
    let group = DispatchGroup()
    for i in 0..<count {
        group.enter()
        let thread = Thread {
            body(i)
            group.leave()
        }
        thread.start()
    }
    return group
}

extension Database {
    /// `SELECT count(*) FROM table` through the read pool.
    func count(_ table: String) throws -> Int {
        try read { try $0.queryValue("SELECT count(*) FROM \(table)")?.intValue ?? -1 }
    }
}

/// Permission bits of the file at `path`.
func permissions(_ path: String) throws -> Int {
    let attributes = try FileManager.default.attributesOfItem(atPath: path)
    return (attributes[.posixPermissions] as? NSNumber)?.intValue ?? -1
}
