import HeraldAPNS
import HeraldCore
import HeraldSender
import HeraldStore

/// The fan-out's decisions, as a value: every event of the fan-out (an event committed, a
/// batch read, an answer, a checkpoint committed, a late joiner, a tick of the clock) is a
/// `mutating` method that returns what to do as `[FanoutAction]`. It does no I/O and never
/// blocks (metrics are atomics; logs are one line each); the engine's thread executes the
/// actions against the storage and the sender and hands their outcomes back.
///
/// The rules it keeps (docs/architecture.md, "The fan-out rules"): per-channel `seq` order,
/// latest wins (`start` and `end` never superseded; an `end` supersedes pending updates),
/// per-token order (a superseded run or a catch-up drains before the next run sends),
/// round-robin fairness, the catch-up gate, cursor inheritance, the duplicate window, the
/// pruning guard, the minimum interval, the priority-10 budget, the express lane, the
/// checkpoint interval, and no checkpoint from a stopped run.
///
/// Not thread-safe (a value owned by one thread).
public struct FanoutScheduler {
    let config: FanoutConfig
    let clock: WallClock
    /// What lease deadlines are measured on (monotonic in production).
    let leaseClock: WallClock
    let metrics: FanoutMetrics
    let logger: Logger

    var channels: [Int64: ChannelState] = [:]
    var order: [Int64] = []
    var rr = 0
    var runs: [RunID: RunState] = [:]
    var nextRun = 0
    /// Late joiners waiting to be sent their channel's current state, oldest first; at most
    /// `config.maxPendingCatchUps`.
    var pendingCatchUps = RingBuffer<(channel: Int64, token: [UInt8])>()
    /// Catch-ups in flight: their tokens, by id.
    var catchUpTokens: [Int: (channel: Int64, token: [UInt8])] = [:]
    var nextCatchUp = 0
    /// The flush of waiting catch-ups under way in this round (nil: none).
    var flush: CatchUpFlush?
    /// Broadcast requests the sender had no room for: submitted again every round.
    var pendingBroadcasts: [RunID] = []
    var unrecordedFinishes: [FinishRecord] = []
    var lastFinishRetry = 0.0
    var lastSweep: Double
    /// Something moved since `takeProgress` was last called.
    var progressed = false
    /// The backend is shared with other workers: poll for events and free shards.
    public var polling = false
    var lastPoll = -Double.infinity
    /// Events whose run ended here, with its shards, while the event is unfinished in
    /// storage (its final write may still be queued): a reload does not send them again.
    var finishedHere: [String: ShardSet] = [:]
    /// When the lease and lag gauges were last set (`updateGauges`).
    var lastGauges = -Double.infinity

    /// Catch-ups handed to the sender in one submission, and at most per round (a 100 000
    /// token batch must not stall the round over the channels).
    static let catchUpChunk = 500

    /// `metrics` is where it counts (a fresh registry in tests).
    public init(
        config: FanoutConfig, clock: WallClock, leaseClock: WallClock = MonotonicClock(), metrics: MetricsRegistry, logger: Logger
    ) {
        self.init(config: config, clock: clock, leaseClock: leaseClock, fanoutMetrics: FanoutMetrics(metrics), logger: logger)
    }

    init(config: FanoutConfig, clock: WallClock, leaseClock: WallClock, fanoutMetrics: FanoutMetrics, logger: Logger) {
        self.config = config
        self.clock = clock
        self.leaseClock = leaseClock
        metrics = fanoutMetrics
        self.logger = logger
        // The first sweep (and subscription count) runs a few seconds after start.
        lastSweep = clock.now() - config.sweepInterval + min(5, config.sweepInterval)
    }

    // MARK: - what the scheduler knows

    /// True when the channel is taken (its lease held): events and late joiners of an
    /// unknown channel need `channelOpened` first.
    public func knows(channelNum: Int64) -> Bool { channels[channelNum] != nil }

    /// The channel number of an open channel it sends, by id.
    public func channelNum(id: String) -> Int64? { channels.first { $0.value.channel.id == id }?.key }

    /// Runs that exist (sending, draining, or waiting for their last answers).
    public var runCount: Int { runs.count }

    /// Late joiners waiting for their catch-up.
    public var waitingCatchUps: Int { pendingCatchUps.count }

    /// True (once) when anything moved since the last call: the engine polls again at
    /// once instead of sleeping.
    public mutating func takeProgress() -> Bool {
        defer { progressed = false }
        return progressed
    }

    // MARK: - intake

    /// A channel taken by this process: its settings, the lease on its shards (asked for at
    /// `askedAt` on the lease clock), and the highest `seq` finished before (those events
    /// are not taken again).
    public mutating func channelOpened(_ channel: Channel, lease: Lease, lastFinishedSeq: Int64, askedAt: Double? = nil) {
        guard channels[channel.num] == nil else { return }
        var ch = ChannelState(channel: channel, lease: lease, acceptedSeq: lastFinishedSeq)
        let asked = askedAt ?? leaseClock.now()
        ch.leaseAskedAt = asked
        ch.leaseDeadline = deadline(of: lease, askedAt: asked)
        channels[channel.num] = ch
        order.append(channel.num)
        if lease.validFor != nil {
            logger.info(
                "fanout.lease_taken", ["channel": .string(channel.id), "shards": .string(lease.shards.description)])
        }
    }

    /// The lease of a channel it sends (nil: not taken).
    public func lease(channelNum: Int64) -> Lease? { channels[channelNum]?.lease }

    /// Unfinished events found at start or when a channel was taken under a shared lease,
    /// each with the shards of the lease it is still to reach, in `seq` order.
    public mutating func resumed(_ events: [ShardedEvent]) {
        var taken: [EventRecord] = []
        for var e in events {
            guard var ch = channels[e.record.channelNum], e.record.seq > ch.acceptedSeq || ch.lease.validFor == nil else { continue }
            // Shards this worker finished the event on, whose write may not have committed.
            if let done = finishedHere[e.record.id] { e.pending = e.pending.subtracting(done) }
            guard !e.pending.isEmpty else { continue }
            if e.pending != ch.lease.shards { ch.pendingShards[e.record.id] = e.pending }
            channels[e.record.channelNum] = ch
            taken.append(e.record)
        }
        resumed(taken)
    }

    /// Unfinished events found at start (by channel, then `seq`), resumed from their cursor.
    public mutating func resumed(_ events: [EventRecord]) {
        for e in events {
            guard var ch = channels[e.channelNum] else { continue }
            ch.pending.append(e)
            ch.acceptedSeq = max(ch.acceptedSeq, e.seq)
            channels[e.channelNum] = ch
        }
    }

    /// An event was committed (`record` as the publish wrote it, `channel` as it read it).
    /// Notices can overtake each other (two API threads publishing on one channel), but
    /// events commit in sequence order: when `record` is not the next, every event between
    /// is loaded first, so no event starts after a newer one has been sent.
    public mutating func eventCommitted(_ record: EventRecord, channel: Channel) -> [FanoutAction] {
        guard var ch = channels[record.channelNum] else { return [] }
        // Already taken: with a later event's notice, or at recovery.
        guard record.seq > ch.acceptedSeq else { return [] }
        // Settings (catch-up, budget, interval) may have changed.
        ch.channel = channel
        let after = ch.acceptedSeq
        channels[record.channelNum] = ch
        // A shared lease: the event is read again with its progress on this lease's shards
        // (another worker may have sent part of them).
        if record.seq == after + 1 && !record.state.isFinished && ch.lease.validFor == nil {
            return eventsLoaded(channelNum: record.channelNum, throughSeq: record.seq, [record])
        }
        return [.loadEvents(channelNum: record.channelNum, afterSeq: after, throughSeq: record.seq)]
    }

    /// The unfinished events up to `throughSeq`, in `seq` order (all above `acceptedSeq`:
    /// everything pending or active is at or below it, so they go at the back, in order).
    public mutating func eventsLoaded(channelNum: Int64, throughSeq: Int64, _ events: [ShardedEvent]) -> [FanoutAction] {
        guard var ch = channels[channelNum], throughSeq > ch.acceptedSeq else { return [] }
        for e in events where e.pending != ch.lease.shards { ch.pendingShards[e.record.id] = e.pending }
        channels[channelNum] = ch
        return eventsLoaded(channelNum: channelNum, throughSeq: throughSeq, events.map(\.record))
    }

    public mutating func eventsLoaded(channelNum: Int64, throughSeq: Int64, _ events: [EventRecord]) -> [FanoutAction] {
        guard var ch = channels[channelNum], throughSeq > ch.acceptedSeq else { return [] }
        ch.acceptedSeq = throughSeq
        var actions: [FanoutAction] = []
        for e in events where e.seq <= throughSeq {
            ch.pending.append(e)
            // A newer update or an end supersedes the update being sent (latest wins).
            if let a = ch.active, let run = runs[a], run.record.kind == .update, e.kind != .start, e.seq > run.record.seq {
                supersede(a, by: e.id, in: &ch, &actions)
            }
            for h in ch.helpers {
                guard let run = runs[h], run.record.kind == .update, e.kind != .start, e.seq > run.record.seq else { continue }
                supersedeHelper(h, by: e.id, in: &ch, &actions)
            }
        }
        channels[channelNum] = ch
        return actions
    }

    /// The channel was closed (its unfinished events are already failed in storage): its
    /// runs stop, their answers are still taken, nothing more is recorded for them.
    public mutating func channelClosed(id: String) -> [FanoutAction] {
        guard let num = channelNum(id: id), let ch = channels[num] else { return [] }
        var actions: [FanoutAction] = []
        drop(ch, &actions)
        logger.info("fanout.channel_closed", ["channel": .string(id)])
        return actions
    }

    /// Stops the channel's runs (their answers are still taken, nothing more is recorded
    /// for them), forgets it and gives its lease back.
    mutating func drop(_ ch: ChannelState, _ actions: inout [FanoutAction]) {
        let num = ch.channel.num
        for r in [ch.active].compactMap({ $0 }) + ch.draining + ch.helpers {
            guard var run = runs[r] else { continue }
            run.stopped = true
            run.orphaned = true
            runs[r] = run
            actions.append(.cancel(r))
            actions += releaseIfDone(r)
        }
        channels[num] = nil
        order.removeAll { $0 == num }
        actions.append(.releaseLease(ch.lease))
    }

    /// Stops `id` in favour of `newer`; the run drains, then is recorded superseded.
    mutating func supersede(_ id: RunID, by newer: String, in ch: inout ChannelState, _ actions: inout [FanoutAction]) {
        guard var run = runs[id] else { return }
        stopSuperseded(id, &run, by: newer, &actions)
        ch.active = nil
        ch.draining.append(id)
        ch.inheritedStart = run.started ? run.checkpointCursor : (run.record.cursor ?? ch.inheritedStart)
        runs[id] = run
        metrics.superseded.inc()
    }

    /// Cancels `run`'s requests and marks it stopping, to be recorded superseded by `newer`
    /// once drained (the active run's and a helper's supersession share this).
    func stopSuperseded(_ id: RunID, _ run: inout RunState, by newer: String, _ actions: inout [FanoutAction]) {
        actions.append(.cancel(id))
        run.stopped = true
        run.stopState = .superseded
        run.supersededBy = newer
    }

    /// An orphaned run (closed channel) with nothing in flight is dropped.
    mutating func releaseIfDone(_ id: RunID) -> [FanoutAction] {
        guard let run = runs[id], run.orphaned, run.drained, !run.scanning else { return [] }
        runs[id] = nil
        if run.started { metrics.activeEvents.add(-1) }
        return [.release(id)]
    }

    mutating func newRunID() -> RunID {
        nextRun += 1
        return RunID(nextRun)
    }
}
