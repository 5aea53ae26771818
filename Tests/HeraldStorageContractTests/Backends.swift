import Foundation
import HeraldAPNS
import HeraldCore
import HeraldPostgresStore
import HeraldStore
import HeraldTestSupport
import Testing

/// The storage backends every contract test runs on.
enum Backend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite, postgres

    var testDescription: String { rawValue }
}

/// A fresh, empty storage of one backend with a manual clock: a SQLite file in a temp
/// directory, or a new database in the process's throwaway PostgreSQL cluster.
final class Fixture {
    let backend: Backend
    let clock = ManualClock(1_796_000_000)
    let storage: any HeraldStorage
    /// The PostgreSQL database's URL (nil on SQLite), for a second worker on it.
    let url: String?
    private let dir: String?
    private var others: [PostgresStore] = []

    init(_ backend: Backend) throws {
        self.backend = backend
        switch backend {
        case .sqlite:
            let d = NSTemporaryDirectory() + "herald-contract-\(UUID().uuidString)"
            try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
            dir = d
            url = nil
            storage = try Store(path: d + "/h.db", clock: clock)
        case .postgres:
            let u = try PostgresCluster.shared().makeDatabase("contract")
            dir = nil
            url = u
            storage = try PostgresStore(url: u, clock: clock, connections: 4)
        }
    }

    /// Another worker on the same PostgreSQL database (its own connections and worker id).
    func secondWorker(leaseDuration: Duration = .seconds(15)) throws -> PostgresStore {
        let s = try PostgresStore(url: try #require(url), clock: clock, connections: 4, leaseDuration: leaseDuration)
        others.append(s)
        return s
    }

    /// Two workers holding half of `channel`'s shards each: this store the lower half, a
    /// second worker (returned) the upper half, as two leases after a share-out.
    func splitLease(_ channel: Channel) throws -> (other: PostgresStore, lower: ShardSet, upper: ShardSet) {
        let other = try secondWorker()
        _ = try #require(try storage.acquireLease(channelNum: channel.num))
        let upper = ShardSet(Shards.count / 2..<Shards.count)
        storage.releaseLease(Lease(channelNum: channel.num, shards: upper))
        #expect(try other.acquireLease(channelNum: channel.num)?.shards == upper)
        return (other, ShardSet(0..<Shards.count / 2), upper)
    }

    /// A second worker with a 300 ms lease on every shard of `channel`, sending `event`
    /// (marked, 10 targets): its lease lapses unless renewed.
    func sendingUnderShortLease(_ channel: Channel, _ event: EventRecord) throws -> (worker: PostgresStore, lease: Lease) {
        let short = try secondWorker(leaseDuration: .milliseconds(300))
        let lease = try #require(try short.acquireLease(channelNum: channel.num))
        try waitFor {
            short.markSending(eventID: event.id, shards: lease.shards, targets: 10, passStart: [], priority: 10, completion: $0)
        }
        return (short, lease)
    }

    /// This store's claim of `channel` once another worker's lease has lapsed (by the
    /// database's clock); nil if none came within 10 s.
    func claimOnceLapsed(_ channel: Channel) throws -> Lease? {
        var next: Lease?
        _ = try Poll.until(timeout: 10, interval: 0.05) {
            next = try storage.acquireLease(channelNum: channel.num)
            return next != nil
        }
        return next
    }

    deinit {
        for s in others { s.close() }
        if let s = storage as? Store { s.close() }
        if let s = storage as? PostgresStore { s.close() }
        if let dir { try? FileManager.default.removeItem(atPath: dir) }
    }

    @discardableResult
    func channel(_ id: String = "m", mode: ChannelMode = .fanout, settings: ChannelSettings = ChannelSettings()) throws -> Channel {
        try storage.createChannel(
            id: id, bundleID: "com.example.app", mode: mode, environment: .sandbox, storagePolicy: .none,
            apnsChannelID: mode == .fanout ? nil : "Y2g=", settings: settings)
    }

    func event(_ kind: LiveActivityEventKind = .update, timestamp: Int64? = nil, pad: Int = 0) throws -> LiveActivityEvent {
        var aps: [String: JSON] = ["event": .string(kind.rawValue), "content-state": ["p": .string(String(repeating: "x", count: pad))]]
        if let timestamp { aps["timestamp"] = .int(timestamp) }
        if kind == .start {
            aps["attributes-type"] = "A"
            aps["attributes"] = [:]
            aps["alert"] = ["title": "t"]
        }
        return try LiveActivityEvent.validate(.object(["aps": .object(aps)]))
    }

    func publish(
        _ kind: LiveActivityEventKind = .update, on channel: String = "m", timestamp: Int64? = nil, key: String? = nil,
        pad: Int = 0, dryRun: Bool = false
    ) throws -> PublishResult {
        try storage.publish(
            channelID: channel, event: try event(kind, timestamp: timestamp, pad: pad), idempotencyKey: key, dryRun: dryRun)
    }
}

/// Waits for a queued write's completion and rethrows its error.
func waitFor(_ start: (@escaping @Sendable (Error?) -> Void) -> Void) throws {
    let done = DispatchSemaphore(value: 0)
    let result = Locked<Error?>(nil)
    start { e in
        result.withLock { $0 = e }
        done.signal()
    }
    done.wait()
    if let e = result.withLock({ $0 }) { throw e }
}

/// `n` distinct 32-byte tokens, reproducible from `seed`.
func tokens(_ n: Int, seed: UInt8 = 1) -> [[UInt8]] {
    (0..<n).map { i in
        var t = [UInt8](repeating: seed, count: 32)
        t[0] = UInt8(truncatingIfNeeded: i >> 8)
        t[1] = UInt8(truncatingIfNeeded: i)
        t[31] = UInt8(truncatingIfNeeded: i &* 37)
        return t
    }
}
