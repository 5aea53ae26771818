import HeraldAPNS
import HeraldCore
import HeraldNet
import HeraldSender

@testable import HeraldFanout
@testable import HeraldStore

/// The fan-out engine on a fake storage and a fake sender with a manual clock, driven one
/// turn at a time from the test's thread (no engine thread, no sockets, no SQLite): every
/// run of a test takes the same steps.
final class Harness {
    let clock = ManualClock(1_796_000_000)
    let storage: FakeStorage
    let tokens: FakeTransport
    let broadcast: FakeTransport
    let metrics = MetricsRegistry()
    let config: FanoutConfig
    private(set) var engine: FanoutEngine
    /// Engines replaced by `crash()` (kept so their late answers go nowhere).
    private var dead: [FanoutEngine] = []
    /// The engines' background work (target counts, the sweep), run on the test's thread
    /// after each turn, in order, unless `holdBackground`: every run of a test takes the
    /// same steps, however loaded the machine.
    let background = Locked<[@Sendable () -> Void]>([])
    /// While true, background work waits (a count that comes back late, when the test says).
    var holdBackground = false

    init(
        capacity: Int = 1_000_000, shared: FakeStorage.SharedLease? = nil, _ configure: (inout FanoutConfig) -> Void = { _ in }
    ) throws {
        storage = FakeStorage(clock: clock)
        storage.shared = shared
        tokens = FakeTransport(capacity: capacity, clock: clock)
        broadcast = FakeTransport(capacity: 100, clock: clock)
        var c = FanoutConfig()
        c.sweepInterval = 1e9
        configure(&c)
        config = c
        engine = FanoutEngine(
            store: storage, transports: SharedTransports(tokens: tokens, broadcast: broadcast), config: c, logger: .discard,
            metrics: metrics, leaseClock: clock)
        engine.background = { [background] work in background.withLock { $0.append(work) } }
        engine.startFeed()
        try engine.resume()
    }

    /// The process died: queued writes and requests in flight are lost; a new engine
    /// resumes from what the storage committed.
    func crash(reached: (APNSRequest) -> Bool = { _ in false }) throws {
        storage.crash()
        tokens.forget(reached: reached)
        broadcast.forget()
        dead.append(engine)
        engine = FanoutEngine(
            store: storage, transports: SharedTransports(tokens: tokens, broadcast: broadcast), config: config, logger: .discard,
            metrics: MetricsRegistry(), leaseClock: clock)
        engine.background = { [background] work in background.withLock { $0.append(work) } }
        engine.startFeed()
        try engine.resume()
    }

    @discardableResult
    func channel(_ id: String = "m", mode: ChannelMode = .fanout, settings: ChannelSettings = ChannelSettings()) throws -> Channel {
        try storage.createChannel(
            id: id, bundleID: "com.example.app", mode: mode, environment: .sandbox, storagePolicy: .none,
            apnsChannelID: mode == .fanout ? nil : "Y2g=", settings: settings)
    }

    func subscribe(_ list: [[UInt8]], kind: SubscriptionKind = .activity) throws { try subscribe("m", list, kind: kind) }

    func subscribe(_ channel: String, _ list: [[UInt8]], kind: SubscriptionKind = .activity) throws {
        _ = try storage.batch(channelID: channel, subscribe: list.map { SubscriptionInput(token: $0, kind: kind) }, unsubscribe: [])
    }

    /// Publishes and tells the engine as the API does (unless `notify` is false).
    @discardableResult
    func publish(_ kind: LiveActivityEventKind = .update, score: Int = 1, alert: Bool = false, notify: Bool = true) throws -> EventRecord {
        try publish("m", kind, score: score, alert: alert, notify: notify)
    }

    @discardableResult
    func publish(
        _ channel: String, _ kind: LiveActivityEventKind = .update, score: Int = 1, alert: Bool = false, notify: Bool = true
    ) throws -> EventRecord {
        var aps: [String: JSON] = ["event": .string(kind.rawValue), "content-state": ["score": .int(Int64(score))]]
        if kind == .start {
            aps["attributes-type"] = "A"
            aps["attributes"] = [:]
        }
        if kind == .start || alert { aps["alert"] = ["title": "t"] }
        let r = try storage.publish(
            channelID: channel, event: try LiveActivityEvent.validate(.object(["aps": .object(aps)])), idempotencyKey: nil,
            dryRun: false)
        if notify { engine.notifyCommitted(r.event, channel: r.channel) }
        return r.event
    }

    /// Registers late joiners and tells the engine.
    func join(_ list: [[UInt8]]) throws { try join("m", list) }

    func join(_ channel: String, _ list: [[UInt8]]) throws {
        let r = try storage.batch(channelID: channel, subscribe: list.map { SubscriptionInput(token: $0) }, unsubscribe: [])
        engine.notifyRegistered(channelID: channel, tokens: r.joined)
    }

    /// One turn of the engine, then (by default) the writer commits what was queued.
    func turn(_ n: Int = 1, commit: Bool = true) {
        for _ in 0..<n {
            _ = engine.turn(wait: 0)
            if commit { storage.commit() }
            runBackground()
        }
    }

    /// Runs the background work queued so far (unless `holdBackground`).
    func runBackground() {
        guard !holdBackground else { return }
        let work = background.withLock { w in
            defer { w.removeAll() }
            return w
        }
        for w in work { w() }
    }

    /// Turns, committing and answering everything delivered, until nothing is left to do.
    @discardableResult
    func settle(
        maxTurns: Int = 10_000, _ outcome: (APNSRequest) -> APNSResult = { _ in .outcome(.delivered(apnsID: nil, uniqueID: nil), nil) }
    )
        -> Int
    {
        for n in 0..<maxTurns {
            turn()
            let answered = tokens.answer(.max, outcome) + broadcast.answer()
            if answered == 0 && tokens.inFlight == 0 && engine.scheduler.runCount == 0 && engine.scheduler.waitingCatchUps == 0
                && storage.queuedWrites == 0 && engine.inboxDepth == 0
            {
                turn()
                if engine.scheduler.runCount == 0 && tokens.inFlight == 0 { return n }
            }
        }
        return maxTurns
    }

    func event(_ e: EventRecord) throws -> EventRecord { try storage.event(id: e.id)! }

    func counter(_ name: String, _ labels: [String: String] = [:]) -> UInt64 {
        metrics.counter(name, help: "", labels: labels).value
    }
}

/// Token `i`: 32 bytes that sort by `i`.
func tok(_ i: Int) -> [UInt8] { [UInt8(i >> 8 & 255), UInt8(i & 255)] + Array(repeating: 0x5a, count: 30) }
func toks(_ r: Range<Int>) -> [[UInt8]] { r.map(tok) }
