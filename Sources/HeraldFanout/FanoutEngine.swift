import Foundation
import HeraldAPNS
import HeraldCore
import HeraldNet
import HeraldSender
import HeraldStore

/// The fan-out scheduler (issue #3): turns committed events into APNs requests — per
/// channel in sequence, newest update wins, fair across channels, checkpointed so a crash
/// resumes where it was — and feeds APNs' answers back (prune, retry counts, progress).
///
/// One scheduler thread owns all run state. Other threads talk to it through `notify…`
/// and the sender's result callbacks, which only enqueue a message.
public final class FanoutEngine: APNSResultSink, @unchecked Sendable {
    // @unchecked: `inbox`/`stopping` are guarded by `cond`; everything else is confined to
    // the scheduler thread.
    public let store: Store
    public let config: FanoutConfig
    let transports: PushTransports
    let logger: Logger
    let metrics: FanoutMetrics
    let clock: WallClock

    let cond = NSCondition()
    var inbox: [Message] = []
    var stopping = false
    var schedulerIdle = false
    /// How long the scheduler sleeps with nothing in flight, and how often it polls for
    /// answers while requests are in flight.
    static let idleWait = 0.05
    static let busyPoll = 0.002
    private var thread: Thread?
    private let finished = DispatchSemaphore(value: 0)

    // Scheduler-thread state.
    var channels: [Int64: ChannelRun] = [:]
    var order: [Int64] = []
    var rr = 0
    var scanner: SubscriptionScanner?
    /// Late joiners waiting to be sent their channel's current state, oldest first; at most
    /// `config.maxPendingCatchUps` (beyond it they are counted and dropped: the next event
    /// reaches them).
    var pendingCatchUps = RingBuffer<(ChannelRun, [UInt8])>()
    /// Catch-ups handed to the sender in one `trySubmit` (and at most per scheduler step:
    /// a 100 000-token batch must not stall the round over the channels).
    static let catchUpChunk = 500
    var pendingBroadcasts: [(APNSRequest, APNSEnvironment)] = []
    var lastSweep = 0.0
    var random = FastRandom()
    var unrecordedFinishes: [UnrecordedFinish] = []
    var lastFinishRetry = 0.0

    enum Message {
        case event(String)
        case completed(APNSRequest, APNSResult)
        case closed(String)
        case catchUp(channelID: String, tokens: [[UInt8]])
        case targets(eventID: String, count: Int64)
        /// A checkpoint write of the event covering `batches` batches committed (or failed).
        case checkpointed(eventID: String, batches: Int)
        case checkpointFailed(eventID: String, error: String)
        /// The database refused an event's final state: written again later.
        case finishFailed(UnrecordedFinish, error: String)
    }

    /// A final state the database did not take (disk full): written again until it does.
    struct UnrecordedFinish: Sendable {
        let eventID: String
        let state: EventState
        let counters: EventCounters
        let reason: String?
        let supersededBy: String?
    }

    final class CatchUp {
        let channel: ChannelRun
        let token: [UInt8]
        init(channel: ChannelRun, token: [UInt8]) {
            self.channel = channel
            self.token = token
        }
    }

    /// `transports` gives the sender for each environment and kind of push.
    public init(
        store: Store, transports: PushTransports, config: FanoutConfig = FanoutConfig(), logger: Logger,
        metrics: MetricsRegistry
    ) {
        self.store = store
        self.transports = transports
        self.config = config
        self.logger = logger.with(subsystem: "fanout")
        self.metrics = FanoutMetrics(metrics)
        clock = store.clock
        // Weak: the registry keeps the sampler and `self.metrics` keeps the registry; a strong
        // capture made a cycle that leaked every engine (LeakSanitizer, scripts/sanitizers).
        metrics.sampledGauge(
            "herald_queue_depth", help: "Items waiting in a named internal queue.", labels: ["queue": "fanout_inbox"]
        ) { [weak self] in Double(self?.inboxDepth ?? 0) }
    }

    /// Starts the scheduler thread; it first resumes every unfinished event.
    public func start() {
        // Weak: the engine keeps `thread`, and Foundation's Thread keeps its closure after it
        // returns, so a strong capture leaked every stopped engine with its pools
        // (LeakSanitizer; Tests/HeraldHostileTests/LeakRegressionTests). `run` holds it while
        // it runs.
        // The scanner's connection is opened here, before the caller goes on to serve, so
        // the process's descriptors are settled once `start` returns (it is used only by
        // the scheduler thread from then on). A failure is retried and logged by `run`.
        scanner = try? SubscriptionScanner(store: store)
        let finished = self.finished
        let t = Thread { [weak self] in
            ThreadName.set("fanout")
            self?.run()
            finished.signal()
        }
        t.name = "fanout"
        t.stackSize = 1 << 21
        thread = t
        t.start()
    }

    /// Stops the scheduler after its current step. Events in progress stay `sending` in the
    /// database and resume on the next start. Not from the scheduler thread.
    public func stop() {
        cond.lock()
        let wasRunning = !stopping && thread != nil
        stopping = true
        cond.broadcast()
        cond.unlock()
        if wasRunning { finished.wait() }
    }

    /// Opens APNs connections for `environment` now (a channel there exists). Any thread.
    public func prepare(_ environment: APNSEnvironment) { transports.prepare(environment) }

    /// A committed event is ready to send. Any thread.
    public func notifyEvent(_ eventID: String) { post(.event(eventID)) }

    /// A channel was closed (its unfinished events are already failed in the database).
    public func notifyClosed(channelID: String) { post(.closed(channelID)) }

    /// Live Activities registered on a channel (a `PUT`, or the new activity tokens of a
    /// batch): send each the current state (late joiner, design delivery 9) if the channel
    /// has one and catch-up is on. One message however many tokens. Any thread.
    public func notifyRegistered(channelID: String, tokens: [[UInt8]]) {
        guard !tokens.isEmpty else { return }
        post(.catchUp(channelID: channelID, tokens: tokens))
    }

    /// One late joiner; as `notifyRegistered(channelID:tokens:)`.
    public func notifyRegistered(channelID: String, token: [UInt8]) { notifyRegistered(channelID: channelID, tokens: [token]) }

    /// The sender's answer for one request (pool loop thread): queued for the scheduler.
    public func apnsCompleted(_ request: APNSRequest, result: APNSResult) { post(.completed(request, result)) }

    var inboxDepth: Int {
        cond.lock()
        defer { cond.unlock() }
        return inbox.count
    }

    func post(_ m: Message) {
        cond.lock()
        inbox.append(m)
        // Answers arrive by the hundred thousand per second: waking the scheduler for each
        // would cost more in context switches than the work. While it has work in flight
        // it polls every few milliseconds, so answers only wake it in bulk (or when it
        // sleeps idle); anything else wakes it at once.
        let wake: Bool
        if case .completed = m {
            wake = inbox.count == 512 || (schedulerIdle && inbox.count == 1)
        } else {
            wake = true
        }
        if wake { cond.signal() }
        cond.unlock()
    }

    /// Takes every queued message, waiting up to `timeout` when there are none.
    func take(timeout: Double) -> [Message]? {
        cond.lock()
        defer { cond.unlock() }
        if inbox.isEmpty && !stopping && timeout > 0 {
            schedulerIdle = timeout >= FanoutEngine.idleWait
            _ = cond.wait(until: Date(timeIntervalSinceNow: timeout))
            schedulerIdle = false
        }
        if stopping { return nil }
        let m = inbox
        inbox.removeAll(keepingCapacity: true)
        return m
    }

    // MARK: - the scheduler loop

    private func run() {
        // The first sweep (and subscription count) runs a few seconds after start.
        lastSweep = clock.now() - config.sweepInterval + min(5, config.sweepInterval)
        do {
            if scanner == nil { scanner = try SubscriptionScanner(store: store) }
            try recover()
        } catch {
            logger.error("fanout.start_failed", ["error": .string("\(error)")])
        }
        var busy = true
        while true {
            let wait = busy ? 0 : nextWait()
            guard let messages = take(timeout: wait) else { break }
            for m in messages { handle(m) }
            busy = step()
            housekeeping()
        }
        scanner = nil
    }

    /// Seconds to sleep when nothing progressed: until the next timer, at most 50 ms (a
    /// completion or a new event wakes it sooner).
    private func nextWait() -> Double {
        var w = Self.idleWait
        let now = clock.now()
        for ch in channels.values {
            if let a = ch.active, a.outstanding > 0 || a.unsubmitted != nil || a.broadcastPending { return Self.busyPoll }
            if !ch.draining.isEmpty { return Self.busyPoll }
            if let next = ch.pending.first, next.kind == .update, ch.channel.minIntervalMillis > 0, ch.active == nil {
                let due = ch.lastUpdateStart + Double(ch.channel.minIntervalMillis) / 1000
                w = min(w, max(0.001, due - now))
            }
        }
        return w
    }

    private func recover() throws {
        // Connections for every environment that has open channels, before any event.
        for env in Set(try store.channels().filter(\.isOpen).map(\.environment)) { transports.prepare(env) }
        let events = try store.unfinishedEvents()
        for e in events {
            guard let ch = try channelRun(num: e.channelNum) else { continue }
            ch.pending.append(e)
            ch.acceptedSeq = max(ch.acceptedSeq, e.seq)
        }
        if !events.isEmpty {
            logger.info("fanout.resumed", ["events": .int(Int64(events.count)), "channels": .int(Int64(Set(events.map(\.channelNum)).count))])
        }
    }

    func channelRun(num: Int64) throws -> ChannelRun? {
        if let c = channels[num] { return c }
        guard let ch = try store.channel(num: num), ch.isOpen else { return nil }
        let run = ChannelRun(channel: ch)
        // Events finished before this process took the channel are not taken again.
        run.acceptedSeq = try store.lastFinishedSeq(channelNum: num)
        channels[num] = run
        order.append(num)
        return run
    }

    private func handle(_ m: Message) {
        switch m {
        case .completed(let r, let result): completed(r, result)
        case .event(let id): accept(eventID: id)
        case .closed(let id): closed(channelID: id)
        case .catchUp(let id, let tokens): queueCatchUps(channelID: id, tokens: tokens)
        case .targets(let id, let n):
            for ch in channels.values {
                if let a = ch.active, a.record.id == id { a.counters.targets = n }
            }
        case .checkpointed(let id, let batches):
            guard let run = eventRun(id: id) else { return }
            run.batchesCommitted = max(run.batchesCommitted, batches)
            if run.checkpointFailing {
                run.checkpointFailing = false
                logger.info("fanout.checkpoint_recovered", ["event_id": .string(id)])
            }
        case .finishFailed(let end, let error):
            logger.error("fanout.finish_failed", ["event_id": .string(end.eventID), "error": .string(error)])
            unrecordedFinishes.append(end)
        case .checkpointFailed(let id, let error):
            guard let run = eventRun(id: id) else { return }
            // Written again at the next interval; meanwhile sending is not held back.
            run.checkpointDirty = true
            if !run.checkpointFailing {
                run.checkpointFailing = true
                logger.error("fanout.checkpoint_failed", ["event_id": .string(id), "error": .string(error)])
            }
        }
    }

    /// The active or draining run of event `id`.
    func eventRun(id: String) -> EventRun? {
        for ch in channels.values {
            if let a = ch.active, a.record.id == id { return a }
            if let d = ch.draining.first(where: { $0.record.id == id }) { return d }
        }
        return nil
    }

    private func accept(eventID: String) {
        do {
            guard let e = try store.event(id: eventID), let ch = try channelRun(num: e.channelNum) else { return }
            // Already taken: with a later event's notification, or at recovery.
            guard e.seq > ch.acceptedSeq else { return }
            // Refresh channel settings (catch-up, budget) that may have changed.
            if let fresh = try store.channel(num: e.channelNum) { ch.channel = fresh }
            // Notifications can overtake each other (two API threads publishing on one
            // channel), but events commit in sequence order: every event before this one is
            // in the database. Take them all, in order, so no event starts after a newer
            // one has been sent (per token, never an older event after a newer one).
            // Everything already pending or active is at or below `acceptedSeq`, so these
            // (in seq order, all above it) go at the back, in order, and none is there yet.
            let events = try store.unfinishedEvents(channelNum: e.channelNum, afterSeq: ch.acceptedSeq, throughSeq: e.seq)
            ch.acceptedSeq = e.seq
            for e in events {
                ch.pending.append(e)
                // A newer update or an end supersedes the update being sent (latest wins).
                if let a = ch.active, a.record.kind == .update, e.kind != .start, e.seq > a.record.seq {
                    supersede(a, by: e.id, in: ch)
                }
            }
        } catch {
            logger.error("fanout.load_failed", ["event_id": .string(eventID), "error": .string("\(error)")])
        }
    }

    private func closed(channelID: String) {
        guard let (num, ch) = channels.first(where: { $0.value.channel.id == channelID }) else { return }
        for r in [ch.active].compactMap({ $0 }) + ch.draining {
            r.template?.cancel()
            r.stopped = true
        }
        channels[num] = nil
        order.removeAll { $0 == num }
        logger.info("fanout.channel_closed", ["channel": .string(channelID)])
    }

    /// Stops `run` in favour of `newer`; the run drains, then is recorded superseded.
    func supersede(_ run: EventRun, by newer: String, in ch: ChannelRun) {
        run.template?.cancel()
        run.stopped = true
        run.stopState = .superseded
        run.supersededBy = newer
        ch.active = nil
        ch.draining.append(run)
        ch.inheritedStart = run.started ? run.checkpointCursor : (run.record.cursor ?? ch.inheritedStart)
        metrics.superseded.inc()
    }
}
