import HeraldCore
import HeraldStore

/// Taking over shards in the middle of an event. A worker busy sending an event on a
/// shared channel keeps asking, at every poll, for the channel's free shards within its
/// share (those of a worker that died, once its lease lapsed). If every shard it gains is
/// still owed exactly the event it is sending — the common case: the dead worker was
/// sending it too — it resumes them at once, from their checkpoints, in a run of its own
/// beside the active one (a helper); the next event starts only once both are done, so
/// per-token order holds. Otherwise (the gained shards owe an older event, or are split
/// between earlier holders' checkpoints) it gives them back and takes them, as before,
/// once its own part is done.
extension FanoutScheduler {
    /// Nothing pending, running, draining or being caught up (what the poll refreshed).
    func isIdle(_ ch: ChannelState) -> Bool {
        ch.active == nil && ch.pending.isEmpty && ch.draining.isEmpty && ch.helpers.isEmpty && ch.catchUpsInFlight == 0
    }

    /// A run (or its drain) is under way.
    func isSending(_ ch: ChannelState) -> Bool { ch.active != nil || !ch.draining.isEmpty || !ch.helpers.isEmpty }

    /// True when the channel's refresh asks for shards freed mid-event (the engine then
    /// reads only the gained shards' events).
    public func refreshesMidEvent(channelNum: Int64) -> Bool { channels[channelNum].map(isSending) ?? false }

    /// Worth asking for free shards while busy: the active run has started and is not
    /// stopping, no helper runs yet, the lease is not every shard, and no pending event is
    /// pinned to part of the lease (its shards would not follow the lease's growth).
    func mayHelp(_ ch: ChannelState) -> Bool {
        guard let a = ch.active, let run = runs[a], run.started, !run.stopped else { return false }
        return ch.helpers.isEmpty && ch.draining.isEmpty && !ch.lease.shards.isAll && ch.pendingShards.isEmpty
    }

    /// A refresh answered while the channel was sending: `lease` is the whole lease now,
    /// `events` the unfinished events owed to the shards it gained.
    mutating func takeOverMidEvent(_ num: Int64, _ lease: Lease, askedAt: Double, events: [ShardedEvent]) -> [FanoutAction] {
        guard var ch = channels[num] else { return [] }
        let gained = lease.shards.subtracting(ch.lease.shards)
        var kept = lease
        kept.shards = ch.lease.shards
        ch.lease = kept
        ch.leaseAskedAt = askedAt
        ch.leaseDeadline = deadline(of: kept, askedAt: askedAt)
        var actions: [FanoutAction] = []
        if let d = ch.leaseDeadline { actions.append(.leaseDeadline(channelNum: num, until: d)) }
        channels[num] = ch
        guard !gained.isEmpty else { return actions }
        let first = events.min { $0.record.seq < $1.record.seq }
        guard mayHelp(ch), let a = ch.active, let active = runs[a], let e = first, e.record.id == active.record.id,
            e.pending == gained
        else {
            // Nothing owed (all done), or not this event alone: handed back, taken when idle.
            actions.append(.releaseShards(Lease(channelNum: num, shards: gained)))
            return actions
        }
        ch.lease.shards = lease.shards
        var run = RunState(id: newRunID(), record: e.record, channel: ch.channel, shards: gained)
        run.priority = e.record.priority
        run.started = true
        run.startedAt = clock.now()
        ch.helpers.append(run.id)
        runs[run.id] = run
        channels[num] = ch
        progressed = true
        metrics.activeEvents.add(1)
        metrics.leasesTaken.inc()
        logger.info(
            "fanout.lease_grown",
            [
                "channel": .string(ch.channel.id), "shards": .string(lease.shards.description),
                "was": .string(ch.lease.shards.subtracting(gained).description), "mid_event": .string(e.record.id),
            ])
        actions.append(
            .start(
                RunStart(
                    run: run.id, eventID: run.record.id, channelNum: num, shards: gained, kind: run.kind, targets: run.counters.targets,
                    passStart: run.passStart, priority: run.priority, usesTokens: run.usesTokens, bundleID: ch.channel.bundleID,
                    expiration: run.record.expiration, payload: run.record.payload, deadline: ch.leaseDeadline)))
        if run.usesBroadcast, let b = broadcastSubmit(run.id) { actions.append(.broadcast(b)) }
        return actions
    }

    /// One step of each helper run (a batch at most), finishing those that are done.
    mutating func stepHelpers(_ num: Int64, _ actions: inout [FanoutAction]) {
        for id in channels[num]?.helpers ?? [] {
            if runs[id]?.stopped == false { nextBatch(id, &actions) }
            afterStep(id, &actions)
        }
    }

    /// A newer event supersedes a helper as it does the active run: it drains, then is
    /// recorded superseded (the newer event starts once it has drained).
    mutating func supersedeHelper(_ id: RunID, by newer: String, in ch: inout ChannelState, _ actions: inout [FanoutAction]) {
        guard var run = runs[id] else { return }
        stopSuperseded(id, &run, by: newer, &actions)
        ch.helpers.removeAll { $0 == id }
        ch.draining.append(id)
        runs[id] = run
    }
}
