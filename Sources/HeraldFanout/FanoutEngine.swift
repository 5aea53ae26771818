import Foundation
import HeraldAPNS
import HeraldCore
import HeraldNet
import HeraldSender
import HeraldStore

/// The fan-out (issue #3) as a thin shell around `FanoutScheduler`: one thread takes the
/// notices and answers from its inbox, hands each to the scheduler, and executes the
/// actions it returns against the storage (`FanoutStorage`) and the senders
/// (`PushTransports`). Every decision is the scheduler's; the thread only does I/O.
///
/// Other threads talk to it through `notify…` and the sinks of its requests, which only
/// enqueue a message.
public final class FanoutEngine: @unchecked Sendable {
    // @unchecked: `inbox`/`answerInbox`/`stopping`/`schedulerIdle` are guarded by `cond`; everything
    // else is confined to the engine thread (the scheduler, the templates, the scanner).
    public let store: any FanoutStorage
    public let config: FanoutConfig
    let transports: PushTransports
    let logger: Logger
    let metrics: FanoutMetrics
    let clock: WallClock
    /// Who hears of finished events, pruned subscriptions and guard trips (the webhooks);
    /// set before `start` or at any time, read on the engine and storage threads.
    public let observer = Locked<(any FanoutObserver)?>(nil)
    /// What lease deadlines are measured on (monotonic; a manual clock in tests).
    let leaseClock: WallClock
    /// Where storage work off the engine thread runs (a run's target count, the sweep): a
    /// global queue; a test that drives the engine turn by turn runs it between turns.
    /// Set before the first turn.
    var background: @Sendable (@escaping @Sendable () -> Void) -> Void = { DispatchQueue.global().async(execute: $0) }
    /// Stops the storage's event feed (nil: it has none).
    private var stopFeed: (@Sendable () -> Void)?

    let cond = NSCondition()
    /// Messages, each with the number of `answerInbox` entries posted before it (their order).
    var inbox: [(message: Message, answersBefore: Int)] = []
    /// Token answers (`RunSink`), beside the messages.
    var answerInbox = AnswerQueue()
    var stopping = false
    var schedulerIdle = false
    /// How long the thread sleeps with nothing in flight, and how often it polls for
    /// answers while requests are in flight.
    static let idleWait = 0.05
    static let busyPoll = 0.002
    /// Notices (events, registrations, closes) waiting at most; past it their producers (API
    /// workers) wait. Answers and write completions never wait (the sender's loop and the
    /// SQLite writer must not block; they are bounded by the requests and writes in flight).
    static let inboxLimit = 65_536
    private var thread: Thread?
    private let finished = DispatchSemaphore(value: 0)

    // Engine-thread state.
    var scheduler: FanoutScheduler
    /// The messages of this turn (swapped with `inbox`).
    var taken: [(message: Message, answersBefore: Int)] = []
    var takenAnswers = AnswerQueue()
    var scanner: SubscriptionScan?
    /// Token templates of started runs, by run.
    var templates: [RunID: APNSTemplate] = [:]
    /// Requests of a batch the sender had no room for (offered again as they are).
    var unsubmitted: [RunID: (batch: Int, requests: [APNSRequest])] = [:]
    /// Broadcast requests the sender had no room for.
    var broadcastRequests: [RunID: APNSRequest] = [:]
    /// The catch-up template of each channel and what it was made from.
    var catchUpTemplates: [Int64: (source: CatchUpKey, template: APNSTemplate)] = [:]
    /// The channel of each started run (its template's deadline follows the lease).
    var runChannels: [RunID: Int64] = [:]
    /// Answered requests, reused for the next token pushes (no object and no path String
    /// allocated per push once warm; freed here, on the thread that made them).
    var requestStock = APNSRequestStock()
    var random = FastRandom()

    enum CatchUpKey: Equatable {
        case run(RunID)
        case event(String)
    }

    enum Message {
        case event(String)
        case committed(EventRecord, Channel)
        /// `request` rides along to be reused (`requestStock`) or released here, on the
        /// thread that allocated it: glibc's malloc keeps freed blocks per thread, so a
        /// million requests freed on the sender's loop sent the engine's allocations down
        /// malloc's slow path and grew the heap (perf of `Benchmarks/fanout.sh`:
        /// `_int_malloc` on the fanout thread).
        /// The pool is done with `request` when it calls the sink: its `attempts` and
        /// `sentAtMillis` are read here (the inbox's lock orders the two threads).
        case answer(RequestID, APNSResult, APNSRequest)
        case closed(String)
        /// Late joiners; `relayed`: told by another worker (not passed on again).
        case registered(channelID: String, tokens: [[UInt8]], relayed: Bool)
        case targets(RunID, Int64?)
        /// A checkpoint write covering `batches` batches committed (or failed).
        case checkpointed(RunID, batches: Int)
        case checkpointFailed(RunID, error: String)
        /// The database refused an event's final state: written again later.
        case finishFailed(FinishRecord, error: String)
        /// A fenced write of the run found its lease held by another worker.
        case leaseLost(RunID)
        /// The storage's feed may have missed events: poll now.
        case pollNow

        var isNotice: Bool {
            switch self {
            case .event, .committed, .closed, .registered: true
            default: false
            }
        }
    }

    /// `transports` gives the sender for each environment and kind of push.
    /// `leaseClock` measures shared leases' deadlines (monotonic unless a test drives it).
    public init(
        store: any FanoutStorage, transports: PushTransports, config: FanoutConfig = FanoutConfig(), logger: Logger,
        metrics: MetricsRegistry, leaseClock: WallClock = MonotonicClock()
    ) {
        self.store = store
        self.transports = transports
        self.config = config
        self.logger = logger.with(subsystem: "fanout")
        self.metrics = FanoutMetrics(metrics)
        clock = store.clock
        self.leaseClock = leaseClock
        scheduler = FanoutScheduler(
            config: config, clock: store.clock, leaseClock: leaseClock, fanoutMetrics: self.metrics, logger: self.logger)
        // Weak: the registry keeps the sampler and `self.metrics` keeps the registry; a strong
        // capture made a cycle that leaked every engine (LeakSanitizer, scripts/sanitizers).
        metrics.sampledGauge(
            "herald_queue_depth", help: "Items waiting in a named internal queue.", labels: ["queue": "fanout_inbox"]
        ) { [weak self] in Double(self?.inboxDepth ?? 0) }
    }

    /// Starts the engine thread; it first resumes every unfinished event.
    public func start() {
        // Weak: the engine keeps `thread`, and Foundation's Thread keeps its closure after it
        // returns, so a strong capture leaked every stopped engine with its pools
        // (LeakSanitizer; Tests/HeraldHostileTests/LeakRegressionTests). `run` holds it while
        // it runs.
        // The scanner's connection is opened here, before the caller goes on to serve, so
        // the process's descriptors are settled once `start` returns (it is used only by
        // the engine thread from then on). A failure is retried and logged by `run`.
        scanner = try? store.makeScanner()
        startFeed()
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

    /// Stops the engine after its current step. Events in progress stay `sending` in the
    /// database and resume on the next start. Not from the engine thread.
    public func stop() {
        cond.lock()
        let wasRunning = !stopping && thread != nil
        stopping = true
        cond.broadcast()
        cond.unlock()
        if wasRunning { finished.wait() }
        stopFeed?()
        stopFeed = nil
    }

    /// Opens APNs connections for `environment` now (a channel there exists). Any thread.
    public func prepare(_ environment: APNSEnvironment) { transports.prepare(environment) }

    /// Opens the APNs connections that will carry `bundleID` in `environment` (with several
    /// Apple teams, that bundle's team's). Any thread.
    public func prepare(_ environment: APNSEnvironment, bundleID: String) { transports.prepare(environment, bundleID: bundleID) }

    /// A committed event is ready to send (read from storage by the engine). Any thread.
    public func notifyEvent(_ eventID: String) { post(.event(eventID)) }

    /// The event a publish just committed, and the channel as the publish read it: taken
    /// as they are, not read again. Any thread.
    public func notifyCommitted(_ record: EventRecord, channel: Channel) { post(.committed(record, channel)) }

    /// A channel was closed (its unfinished events are already failed in the database).
    public func notifyClosed(channelID: String) { post(.closed(channelID)) }

    /// Live Activities registered on a channel (a `PUT`, or the new activity tokens of a
    /// batch): send each the current state (late joiner, design delivery 9) if the channel
    /// has one and catch-up is on. One message however many tokens. Any thread.
    public func notifyRegistered(channelID: String, tokens: [[UInt8]]) {
        guard !tokens.isEmpty else { return }
        post(.registered(channelID: channelID, tokens: tokens, relayed: false))
    }

    /// One late joiner; as `notifyRegistered(channelID:tokens:)`.
    public func notifyRegistered(channelID: String, token: [UInt8]) { notifyRegistered(channelID: channelID, tokens: [token]) }

    var inboxDepth: Int {
        cond.lock()
        defer { cond.unlock() }
        return inbox.count + answerInbox.count
    }

    func post(_ m: consuming Message) {
        let isAnswer: Bool
        if case .answer = m { isAnswer = true } else { isAnswer = false }
        cond.lock()
        if m.isNotice {
            while inbox.count + answerInbox.count >= Self.inboxLimit && !stopping { cond.wait() }
        }
        inbox.append((m, answerInbox.count))
        let depth = inbox.count + answerInbox.count
        // Answers arrive by the hundred thousand per second: waking the thread for each
        // would cost more in context switches than the work. While it has work in flight
        // it polls every few milliseconds, so answers only wake it in bulk (or when it
        // sleeps idle); anything else wakes it at once.
        let wake = isAnswer ? depth == 512 || (schedulerIdle && depth == 1) : true
        // Broadcast when full: API workers may be waiting on the same condition for room.
        if wake { if depth >= Self.inboxLimit { cond.broadcast() } else { cond.signal() } }
        cond.unlock()
    }

    /// A token request's answer (its run's sink, on the sender's loop): as `post`, into the
    /// answers' own queue; never waits.
    /// A run's answers of one loop turn of the pool (its batched sink call), under one lock.
    func post(answers batch: ArraySlice<APNSCompletion>, run: RunID, batchSize: Int) {
        guard !batch.isEmpty else { return }
        cond.lock()
        let before = answerInbox.count
        let wasEmpty = inbox.isEmpty && before == 0
        // Through the buffer: each completion is read in place, not copied out of the batch.
        batch.withUnsafeBufferPointer { p in
            for i in p.indices {
                let r = p[i].request
                answerInbox.append(AnswerQueue.answer(p[i].result, of: r, batchSize: batchSize), request: r)
            }
        }
        answerInbox.closeSpan(run)
        let depth = inbox.count + answerInbox.count
        // As one post per answer would: a wake-up when the queue reaches 512, or at the first
        // message to an idle scheduler.
        if (before < 512 && answerInbox.count >= 512) || (schedulerIdle && wasEmpty) {
            if depth >= Self.inboxLimit { cond.broadcast() } else { cond.signal() }
        }
        cond.unlock()
    }

    /// One token request's answer (its run's sink, on the sender's loop); never waits.
    func post(answer result: consuming APNSResult, of request: APNSRequest, run: RunID, batchSize: Int) {
        let answer = AnswerQueue.answer(result, of: request, batchSize: batchSize)
        cond.lock()
        answerInbox.append(answer, request: request)
        answerInbox.closeSpan(run)
        let depth = inbox.count + answerInbox.count
        if answerInbox.count == 512 || (schedulerIdle && depth == 1) {
            if depth >= Self.inboxLimit { cond.broadcast() } else { cond.signal() }
        }
        cond.unlock()
    }

    /// Moves every queued message into `taken` (empty, engine thread), waiting up to
    /// `timeout` when there are none. False: stopping. The two buffers are swapped, not
    /// copied: a fresh buffer per turn (hundreds of kilobytes during a big fan-out) cost an
    /// allocation and its page faults every few milliseconds.
    func take(
        timeout: Double, into taken: inout [(message: Message, answersBefore: Int)], answers: inout AnswerQueue
    ) -> Bool {
        cond.lock()
        defer { cond.unlock() }
        if inbox.isEmpty && answerInbox.isEmpty && !stopping && timeout > 0 {
            schedulerIdle = timeout >= FanoutEngine.idleWait
            _ = cond.wait(until: Date(timeIntervalSinceNow: timeout))
            schedulerIdle = false
        }
        if stopping { return false }
        if inbox.count + answerInbox.count >= Self.inboxLimit { cond.broadcast() }  // producers waiting for room
        swap(&inbox, &taken)
        swap(&answerInbox, &answers)
        return true
    }

    // MARK: - the loop

    private func run() {
        do {
            try resume()
        } catch {
            logger.error("fanout.start_failed", ["error": .string("\(error)")])
        }
        var busy = true
        while let next = turn(wait: busy ? 0 : scheduler.nextWait(idle: Self.idleWait, busy: Self.busyPoll)) { busy = next }
        scanner = nil
    }

    /// One turn of the loop: takes the inbox (waiting up to `wait` seconds for something),
    /// hands each message to the scheduler, runs a round and the housekeeping. Returns
    /// whether anything moved (nil: stopping). Tests drive an engine they did not start
    /// with it, one turn at a time.
    func turn(wait: Double) -> Bool? {
        guard take(timeout: wait, into: &taken, answers: &takenAnswers) else { return nil }
        stockAnsweredRequests()
        // Moved out one by one (reversed, then popped): iterating the array copied every
        // message and emptying it destroyed the originals.
        taken.reverse()
        // A run's token answers in a row go to the scheduler together, in the order they
        // came: every message hands over the answers posted before it first.
        var used = 0
        var span = 0
        while let (m, before) = taken.popLast() {
            handAnswers(upTo: before, &used, &span)
            handle(m)
        }
        handAnswers(upTo: .max, &used, &span)
        takenAnswers.removeAll()
        execute(scheduler.tick())
        let busy = scheduler.takeProgress()
        execute(scheduler.housekeeping())
        return busy
    }

    /// Subscribes to the storage's feed of events committed by any worker; a backend that
    /// has one is shared, so the scheduler also polls. Tests call it on an engine they drive.
    func startFeed() {
        guard stopFeed == nil else { return }
        stopFeed = store.watchEvents { [weak self] notice in
            switch notice {
            case .event(let id): self?.post(.event(id))
            case .joined(let channelID, let tokens): self?.post(.registered(channelID: channelID, tokens: tokens, relayed: true))
            case .missed: self?.post(.pollNow)
            }
        }
        scheduler.polling = stopFeed != nil
    }

    /// Opens the scanner and takes every unfinished event (what `start` does first).
    func resume() throws {
        if scanner == nil { scanner = try store.makeScanner() }
        try recover()
    }

    private func recover() throws {
        // Connections for every environment that has open channels, before any event.
        struct Route: Hashable {
            let env: APNSEnvironment
            let bundle: String
        }
        for r in Set(try store.channels().filter(\.isOpen).map { Route(env: $0.environment, bundle: $0.bundleID) }) {
            transports.prepare(r.env, bundleID: r.bundle)
        }
        let events = try store.unfinishedEvents()
        var seen = Set<Int64>()
        var shared = Set<Int64>()
        for e in events where seen.insert(e.channelNum).inserted {
            _ = try ensureChannel(e.channelNum)
            if scheduler.lease(channelNum: e.channelNum)?.validFor != nil { shared.insert(e.channelNum) }
        }
        // Shared leases read their events with their shards' progress (`ensureChannel`).
        scheduler.resumed(events.filter { !shared.contains($0.channelNum) })
        if !events.isEmpty {
            logger.info("fanout.resumed", ["events": .int(Int64(events.count)), "channels": .int(Int64(seen.count))])
        }
    }

    /// Takes the channel (its settings, lease and finished `seq`) unless the scheduler has
    /// it. False: closed, unknown, or its shards leased elsewhere.
    func ensureChannel(_ num: Int64) throws -> Bool {
        if scheduler.knows(channelNum: num) { return true }
        let askedAt = leaseClock.now()
        guard let ch = try store.channel(num: num), ch.isOpen, let lease = try store.claimShare(channelNum: num) else {
            return false
        }
        guard lease.validFor != nil else {
            scheduler.channelOpened(ch, lease: lease, lastFinishedSeq: try store.lastFinishedSeq(channelNum: num), askedAt: askedAt)
            return true
        }
        // A shared lease: every unfinished event, with its progress on these shards (an
        // older event may still be owed to a shard another worker gave up).
        scheduler.channelOpened(ch, lease: lease, lastFinishedSeq: 0, askedAt: askedAt)
        do {
            scheduler.resumed(try store.unfinishedEvents(channelNum: num, shards: lease.shards, afterSeq: 0, throughSeq: .max))
        } catch {
            var dropped: [FanoutAction] = []
            scheduler.giveUp(num, reason: "idle", &dropped)
            execute(dropped)
            throw error
        }
        return true
    }

    private func handle(_ m: Message) {
        switch m {
        case .answer(let id, let result, let r):
            let attempts = r.attempts
            let sentAtMillis = r.sentAtMillis
            // The pool is done with it (it called the sink); the inbox's lock ordered that.
            requestStock.put(r)
            execute(scheduler.answered(id, result, attempts: attempts, sentAtMillis: sentAtMillis))
        case .event(let id):
            do {
                guard let e = try store.event(id: id), try ensureChannel(e.channelNum), let ch = try store.channel(num: e.channelNum)
                else { return }
                execute(scheduler.eventCommitted(e, channel: ch))
            } catch {
                logger.error("fanout.load_failed", ["event_id": .string(id), "error": .string("\(error)")])
            }
        case .committed(let e, let ch):
            do {
                guard try ensureChannel(e.channelNum) else { return }
                execute(scheduler.eventCommitted(e, channel: ch))
            } catch {
                logger.error("fanout.load_failed", ["event_id": .string(e.id), "error": .string("\(error)")])
            }
        case .closed(let id): execute(scheduler.channelClosed(id: id))
        case .registered(let id, let tokens, let relayed):
            do {
                guard let ch = try store.channel(id: id), ch.isOpen, ch.catchUp, ch.mode.usesTokens else { return }
                let held = try ensureChannel(ch.num) ? scheduler.lease(channelNum: ch.num) : nil
                // Shared leases: the tokens of shards another worker holds are its to catch up.
                if !relayed, held?.shards.isAll != true {
                    let theirs = held.map { l in tokens.filter { !l.shards.holds(token: $0) } } ?? tokens
                    if !theirs.isEmpty { store.announceJoined(channelID: id, tokens: theirs) }
                }
                if held != nil { scheduler.registered(ch, tokens: tokens) }
            } catch {
                logger.warning("fanout.catchup_failed", ["channel": .string(id), "error": .string("\(error)")])
            }
        case .targets(let id, let n): scheduler.targetsCounted(id, n)
        case .checkpointed(let id, let batches): scheduler.checkpointCommitted(id, batches: batches)
        case .checkpointFailed(let id, let error): scheduler.checkpointFailed(id, error: error)
        case .finishFailed(let f, let error): scheduler.finishFailed(f, error: error)
        case .leaseLost(let id): execute(scheduler.leaseLost(run: id))
        case .pollNow: scheduler.pollSoon()
        }
    }

    /// Runs `actions` in order; the outcome of each is handed to the scheduler, and what it
    /// returns runs before the rest.
    func execute(_ actions: [FanoutAction]) {
        guard !actions.isEmpty else { return }
        var stack = Array(actions.reversed())
        while let a = stack.popLast() {
            let more = perform(a)
            if !more.isEmpty { stack.append(contentsOf: more.reversed()) }
        }
    }
}
