import Foundation
import HeraldAPNS
import HeraldCore
import HeraldFanout
import HeraldNet
import HeraldSender
import HeraldSimulator
import HeraldStore

/// A real store (temp SQLite file), a real simulator on loopback, token and broadcast
/// pools, and the fan-out engine wired together.
public final class FanoutFixture: @unchecked Sendable {
    public let sim: SimFixture
    public let dbPath: String
    public let store: Store
    /// What the engine (and an API over this fixture) runs on: `store`, unless the fixture
    /// was given another storage.
    public let storage: any HeraldStorage
    private let closeStorageNow: @Sendable () -> Void
    public let pool: APNSClientPool
    public let broadcastPool: APNSClientPool
    public let channels: APNSChannelManager
    public let engine: FanoutEngine
    public let metrics = MetricsRegistry()

    public init(
        connections: Int = 2, clock: WallClock = SystemClock(), fanout: (inout FanoutConfig) -> Void = { _ in },
        pool poolConfig: (inout APNSPoolConfig) -> Void = { _ in }, simulator: (inout SimulatorConfig) -> Void = { _ in },
        storage factory: StorageFactory? = nil
    ) throws {
        sim = try SimFixture(configure: simulator)
        dbPath = sim.dir + "/herald.db"
        store = try Store(path: dbPath, clock: clock)
        if let factory {
            let opened = try factory.make(sim.dir, clock)
            storage = opened.storage
            closeStorageNow = opened.close
        } else {
            storage = store
            closeStorageNow = {}
        }
        (pool, _) = try sim.pool(connections: connections, configure: poolConfig)
        (broadcastPool, _) = try sim.pool(connections: 1) { c in
            c.name = "broadcast"
            // As APNSPools' management pools: `all-channels` answers are up to ~270 KB.
            c.http2.maxResponseBody = 1 << 20
        }
        channels = APNSChannelManager(pool: broadcastPool, timeout: 10)
        var fc = FanoutConfig()
        fc.checkpointInterval = 0.05
        fanout(&fc)
        engine = FanoutEngine(
            store: storage, transports: SharedTransports(tokens: pool, broadcast: broadcastPool), config: fc, logger: .discard,
            metrics: metrics)
        engine.start()
    }

    deinit {
        engine.stop()
        pool.shutdown()
        broadcastPool.shutdown()
        closeStorageNow()
        store.close()
    }

    /// Closes the storage under the running engine and API (and `store`): what a database
    /// that went away looks like to them.
    public func closeStorage() {
        closeStorageNow()
        store.close()
    }

    /// Creates a channel (and its APNs channel for broadcast modes).
    @discardableResult
    public func channel(
        _ id: String, mode: ChannelMode = .fanout, storage: StoragePolicy = .none, bundle: String = "com.example.app",
        settings: ChannelSettings = ChannelSettings()
    ) throws -> Channel {
        var apnsID: String?
        if mode.usesBroadcast { apnsID = try channels.create(bundleID: bundle, storagePolicy: storage.apnsValue) }
        return try self.storage.createChannel(
            id: id, bundleID: bundle, mode: mode, environment: .sandbox, storagePolicy: storage, apnsChannelID: apnsID,
            settings: settings)
    }

    /// Registers `tokens` (hex) on a channel.
    public func subscribe(_ channel: String, _ tokens: [String], kind: SubscriptionKind = .activity) throws {
        for chunk in stride(from: 0, to: tokens.count, by: 50_000) {
            let inputs = tokens[chunk..<min(chunk + 50_000, tokens.count)].map { SubscriptionInput(token: Hex.decode($0)!, kind: kind) }
            _ = try storage.batch(channelID: channel, subscribe: Array(inputs), unsubscribe: [])
        }
    }

    /// Publishes an event and tells the engine (unless `notify` is false: the caller tells
    /// it later, as a slow API thread would).
    @discardableResult
    public func publish(
        _ channel: String, _ kind: LiveActivityEventKind = .update, state: JSON = ["score": 1], extra: [String: JSON] = [:],
        timestamp: Int64? = nil, notify: Bool = true
    ) throws -> EventRecord {
        var aps: [String: JSON] = ["event": .string(kind.rawValue), "content-state": state]
        if kind == .start {
            aps["attributes-type"] = "MatchAttributes"
            aps["attributes"] = ["matchID": "final"]
            aps["alert"] = ["title": "Kick-off", "body": "Follow it live"]
        }
        if let timestamp { aps["timestamp"] = .int(timestamp) }
        for (k, v) in extra { aps[k] = v }
        let event = try LiveActivityEvent.validate(.object(["aps": .object(aps)]))
        let r = try storage.publish(channelID: channel, event: event, idempotencyKey: nil, dryRun: false)
        if notify { engine.notifyEvent(r.event.id) }
        return r.event
    }

    /// Waits until the event is finished (or `timeout`), returning its record.
    public func waitFinished(_ e: EventRecord, timeout: Double = 60) throws -> EventRecord {
        try waitFor(e, timeout: timeout) { $0.state.isFinished }
    }

    /// Polls the event's record until `condition` holds or `timeout` passes.
    public func waitFor(_ e: EventRecord, timeout: Double = 60, _ condition: (EventRecord) -> Bool) throws -> EventRecord {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while true {
            let r = try storage.event(channelID: e.channelID, eventID: e.id)
            if condition(r) || Date() > deadline { return r }
            usleep(5_000)
        }
    }

    /// Waits until the simulator has accepted at least `n` token pushes.
    public func waitAccepted(_ n: Int, timeout: Double = 60) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while sim.sim.stats().accepted < n {
            if Date() > deadline { return false }
            usleep(2_000)
        }
        return true
    }
}
