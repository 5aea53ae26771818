import HeraldCore
import HeraldStore

/// Shared leases (several workers on one PostgreSQL): each channel's lease has a local
/// deadline — the time the database said was left when this worker asked, counted on the
/// lease clock from the moment it asked, less `config.leaseMargin` of it. Past it nothing
/// more is handed to the sender for the channel (requests already handed over but not yet
/// written carry the deadline and are dropped by the sender), its runs stop without
/// recording anything, and the lease is given back: the next holder resumes each shard from
/// its last committed checkpoint. A lease lost before its deadline (a fenced write or a
/// renewal found another owner) is given up the same way.
extension FanoutScheduler {
    /// The local deadline of `lease` asked for at `askedAt` (nil: it never lapses).
    func deadline(of lease: Lease, askedAt: Double) -> Double? {
        lease.validFor.map { askedAt + max(0, $0) * (1 - config.leaseMargin) }
    }

    /// True while the channel's lease holds; past its deadline the channel is given up.
    mutating func leaseHolds(_ num: Int64, _ actions: inout [FanoutAction]) -> Bool {
        guard let ch = channels[num] else { return false }
        guard let d = ch.leaseDeadline, leaseClock.now() >= d else { return true }
        giveUp(num, reason: "expired", &actions)
        return false
    }

    /// Stops sending the channel here and hands its lease back.
    mutating func giveUp(_ num: Int64, reason: String, _ actions: inout [FanoutAction]) {
        guard let ch = channels[num] else { return }
        drop(ch, &actions)
        if reason != "idle" { metrics.leasesLost(reason).inc() }
        logger.log(
            reason == "idle" ? .info : .warning, "fanout.lease_given_up",
            ["channel": .string(ch.channel.id), "shards": .string(ch.lease.shards.description), "reason": .string(reason)])
    }

    /// Renewals, polls and idle releases (from `housekeeping`).
    mutating func leaseHousekeeping(_ actions: inout [FanoutAction]) {
        let now = leaseClock.now()
        var due: [Lease] = []
        for num in order {
            guard var ch = channels[num], let validFor = ch.lease.validFor else { continue }
            let idle = ch.active == nil && ch.pending.isEmpty && ch.draining.isEmpty && ch.helpers.isEmpty && ch.catchUpsInFlight == 0
            if !idle {
                ch.idleSince = nil
            } else if ch.idleSince == nil {
                ch.idleSince = now
            }
            channels[num] = ch
            if let since = ch.idleSince, now - since >= config.idleLeaseRelease, !ch.refreshing, !ch.renewing, flush == nil {
                giveUp(num, reason: "idle", &actions)
                continue
            }
            if !ch.renewing && !ch.refreshing && now - ch.leaseAskedAt >= validFor * config.leaseRenewal {
                channels[num]?.renewing = true
                due.append(ch.lease)
            }
        }
        // One renewal for all: the channels half-way to theirs go along, so their renewals
        // fall into the same ticks from then on.
        if !due.isEmpty {
            for num in order {
                guard let ch = channels[num], let validFor = ch.lease.validFor, !ch.renewing, !ch.refreshing,
                    now - ch.leaseAskedAt >= validFor * config.leaseRenewal / 2
                else { continue }
                channels[num]?.renewing = true
                due.append(ch.lease)
            }
            actions.append(.renewLeases(due))
        }
        if polling && now - lastPoll >= config.pollInterval {
            lastPoll = now
            actions.append(.poll)
        }
    }

    /// A renewal asked for at `askedAt` came back: the shards still held (nil: none), or
    /// it failed (`failed`: tried again at the next interval; the deadline stays).
    public mutating func leaseRenewed(channelNum: Int64, _ lease: Lease?, askedAt: Double, failed: Bool = false) -> [FanoutAction] {
        guard var ch = channels[channelNum] else { return [] }
        ch.renewing = false
        var actions: [FanoutAction] = []
        if failed {
            channels[channelNum] = ch
            return []
        }
        guard let lease, lease.shards.isSuperset(of: ch.lease.shards) else {
            channels[channelNum] = ch
            giveUp(channelNum, reason: "lost", &actions)
            return actions
        }
        ch.lease = lease
        ch.leaseAskedAt = askedAt
        ch.leaseDeadline = deadline(of: lease, askedAt: askedAt)
        channels[channelNum] = ch
        if let d = ch.leaseDeadline { actions.append(.leaseDeadline(channelNum: channelNum, until: d)) }
        return actions
    }

    /// A fenced write of `run` found the lease gone (another worker holds a shard now).
    public mutating func leaseLost(run: RunID) -> [FanoutAction] {
        guard let r = runs[run], !r.orphaned, channels[r.channelNum] != nil else { return [] }
        var actions: [FanoutAction] = []
        giveUp(r.channelNum, reason: "lost", &actions)
        return actions
    }

    /// The poll's answer: every unfinished event in storage. Channels not taken here are
    /// taken (`acquire`: free shards, this worker's share); taken ones with nothing to do
    /// are refreshed (their lease grows by shards freed since, and events still to reach
    /// them are read again).
    public mutating func polled(unfinished: [EventRecord]) -> [FanoutAction] {
        let ids = Set(unfinished.map(\.id))
        finishedHere = finishedHere.filter { ids.contains($0.key) }
        var actions: [FanoutAction] = []
        for num in Set(unfinished.map(\.channelNum)).sorted() {
            guard let ch = channels[num] else {
                actions.append(.acquire(channelNum: num))
                continue
            }
            guard ch.lease.validFor != nil, !ch.refreshing, !ch.renewing, isIdle(ch) || mayHelp(ch) else { continue }
            channels[num]?.refreshing = true
            actions.append(.refresh(channelNum: num))
        }
        return actions
    }

    /// A refresh's answer: the channel's lease now (asked for at `askedAt`; nil: none held)
    /// and its unfinished events with the shards of it they are still to reach.
    public mutating func leaseRefreshed(channelNum: Int64, _ lease: Lease?, askedAt: Double, events: [ShardedEvent]) -> [FanoutAction] {
        guard var ch = channels[channelNum] else { return [] }
        ch.refreshing = false
        var actions: [FanoutAction] = []
        guard let lease, lease.shards.isSuperset(of: ch.lease.shards) else {
            channels[channelNum] = ch
            giveUp(channelNum, reason: "lost", &actions)
            return actions
        }
        if isSending(ch) {
            channels[channelNum] = ch
            return takeOverMidEvent(channelNum, lease, askedAt: askedAt, events: events)
        }
        if lease.shards != ch.lease.shards {
            logger.info(
                "fanout.lease_grown",
                [
                    "channel": .string(ch.channel.id), "shards": .string(lease.shards.description),
                    "was": .string(ch.lease.shards.description),
                ])
            metrics.leasesTaken.inc()
        }
        ch.lease = lease
        ch.leaseAskedAt = askedAt
        ch.leaseDeadline = deadline(of: lease, askedAt: askedAt)
        channels[channelNum] = ch
        guard ch.active == nil, ch.draining.isEmpty else { return actions }
        ch.pending = []
        ch.pendingShards = [:]
        for var e in events.sorted(by: { $0.record.seq < $1.record.seq }) {
            if let done = finishedHere[e.record.id] { e.pending = e.pending.subtracting(done) }
            e.pending = e.pending.intersection(lease.shards)
            guard !e.pending.isEmpty else { continue }
            ch.pending.append(e.record)
            if e.pending != lease.shards { ch.pendingShards[e.record.id] = e.pending }
            ch.acceptedSeq = max(ch.acceptedSeq, e.record.seq)
        }
        if !ch.pending.isEmpty { progressed = true }
        channels[channelNum] = ch
        return actions
    }

    /// The refresh failed (logged by the engine): tried again at the next poll.
    public mutating func refreshFailed(channelNum: Int64) { channels[channelNum]?.refreshing = false }
}

extension FanoutScheduler {
    /// Polls at the next housekeeping (the event feed may have missed some).
    public mutating func pollSoon() { lastPoll = -Double.infinity }
}
