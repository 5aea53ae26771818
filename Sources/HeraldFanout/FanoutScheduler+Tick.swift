import HeraldAPNS
import HeraldCore
import HeraldSender
import HeraldStore

extension FanoutScheduler {
    /// One round: every channel with work gets one step (at most one batch), round robin —
    /// so a channel with ten subscribers is never stuck behind one with a million (delivery
    /// 7) — then waiting late joiners are flushed.
    public mutating func tick() -> [FanoutAction] {
        var actions: [FanoutAction] = []
        let n = order.count
        for k in 0..<n {
            let num = order[(rr + k) % n]
            stepChannel(num, &actions)
        }
        rr = (rr + 1) % max(1, order.count)
        if !pendingBroadcasts.isEmpty {
            let waiting = pendingBroadcasts
            pendingBroadcasts.removeAll()
            for id in waiting {
                if let b = broadcastSubmit(id) { actions.append(.broadcast(b)) }
            }
        }
        actions += startFlush()
        return actions
    }

    mutating func stepChannel(_ num: Int64, _ actions: inout [FanoutAction]) {
        // Past the lease's local deadline nothing more is sent for its shards.
        guard leaseHolds(num, &actions), var ch = channels[num] else { return }
        // Superseded runs finish once their last requests are answered and their targets
        // are counted (`skipped` is the targets not reached).
        let done = ch.draining.filter { runs[$0].map { $0.drained && !$0.countPending } ?? true }
        if !done.isEmpty {
            ch.draining.removeAll { done.contains($0) }
            channels[num] = ch
            for id in done { finish(id, &actions) }
            ch = channels[num]!
        }
        if !ch.helpers.isEmpty {
            channels[num] = ch
            stepHelpers(num, &actions)
            ch = channels[num]!
        }
        if ch.active == nil {
            selectNext(&ch, &actions)
        }
        channels[num] = ch
        guard let id = ch.active, var run = runs[id] else { return }
        if !run.started {
            // Nothing of the new event goes out while an older one (or a late joiner's
            // catch-up) still has requests in flight: per token, never an older event after
            // a newer one (delivery 4).
            guard ch.draining.isEmpty, ch.helpers.isEmpty, ch.catchUpsInFlight == 0 else { return }
            start(&run, &ch, &actions)
            runs[id] = run
            channels[num] = ch
        }
        if run.stopped {
            if run.drained && !run.scanning {
                channels[num]?.active = nil
                finish(id, &actions)
            }
            return
        }
        nextBatch(id, &actions)
        afterStep(id, &actions)
    }

    /// Finishes the channel's active run when everything of it is answered.
    mutating func afterStep(_ id: RunID, _ actions: inout [FanoutAction]) {
        guard let run = runs[id], !run.finishing, !run.orphaned, run.finished || (run.stopped && run.drained && !run.scanning),
            let ch = channels[run.channelNum]
        else { return }
        if ch.active == id {
            channels[run.channelNum]?.active = nil
        } else if let k = ch.helpers.firstIndex(of: id) {
            channels[run.channelNum]?.helpers.remove(at: k)
        } else {
            return
        }
        finish(id, &actions)
    }

    /// Picks the next pending event, superseding queued updates that a later update or end
    /// (before any start) makes pointless.
    mutating func selectNext(_ ch: inout ChannelState, _ actions: inout [FanoutAction]) {
        while ch.active == nil, let e = ch.pending.first {
            // The next update or end queued before any start supersedes a queued update.
            let newer = e.kind == .update ? ch.pending.dropFirst().prefix(while: { $0.kind != .start }).first : nil
            if let newer {
                ch.pending.removeFirst()
                var r = RunState(
                    id: newRunID(), record: e, channel: ch.channel, shards: ch.pendingShards.removeValue(forKey: e.id) ?? ch.lease.shards)
                r.stopped = true
                r.stopState = .superseded
                r.supersededBy = newer.id
                if let c = e.cursor { ch.inheritedStart = c }
                metrics.superseded.inc()
                runs[r.id] = r
                let num = ch.channel.num
                channels[num] = ch
                finish(r.id, &actions)
                ch = channels[num]!
                continue
            }
            if e.kind == .update, ch.channel.minIntervalMillis > 0,
                clock.now() < ch.lastUpdateStart + Double(ch.channel.minIntervalMillis) / 1000
            {
                return
            }
            ch.pending.removeFirst()
            var r = RunState(
                id: newRunID(), record: e, channel: ch.channel, shards: ch.pendingShards.removeValue(forKey: e.id) ?? ch.lease.shards)
            if e.passStart == nil, let inherited = ch.inheritedStart {
                r.passStart = inherited
                r.scanCursor = inherited
                r.checkpointCursor = inherited
            }
            ch.inheritedStart = nil
            ch.active = r.id
            runs[r.id] = r
            progressed = true
        }
    }

    /// Marks the event sending, applies the priority budget, and submits the broadcast part.
    mutating func start(_ run: inout RunState, _ ch: inout ChannelState, _ actions: inout [FanoutAction]) {
        let now = clock.now()
        run.started = true
        run.startedAt = now
        // Its `.start` counts the targets in the background (→ `targetsCounted`).
        run.countPending = run.usesTokens
        progressed = true
        if run.record.kind == .update { ch.lastUpdateStart = now }
        if run.priority == 10 && ch.channel.priority10BudgetPerHour > 0 {
            ch.priority10Sends.removeAll { $0 < now - 3600 }
            if ch.priority10Sends.count >= Int(ch.channel.priority10BudgetPerHour) {
                run.priority = 5
                metrics.downgrades.inc()
                logger.info("fanout.priority_downgraded", ["event_id": .string(run.record.id), "channel": .string(ch.channel.id)])
            } else {
                ch.priority10Sends.append(now)
            }
        }
        metrics.activeEvents.add(1)
        actions.append(
            .start(
                RunStart(
                    run: run.id, eventID: run.record.id, channelNum: ch.channel.num, shards: run.shards, kind: run.kind,
                    targets: run.counters.targets, passStart: run.passStart, priority: run.priority, usesTokens: run.usesTokens,
                    bundleID: ch.channel.bundleID, expiration: run.record.expiration, payload: run.record.payload,
                    deadline: ch.leaseDeadline)))
        logger.info(
            "fanout.event_started",
            [
                "event_id": .string(run.record.id), "channel": .string(ch.channel.id), "kind": .string(run.record.kind.rawValue),
                "seq": .int(run.record.seq), "priority": .int(Int64(run.priority)), "resumed": .bool(run.record.cursor != nil),
            ])
        if run.usesBroadcast {
            runs[run.id] = run
            if let b = broadcastSubmit(run.id) { actions.append(.broadcast(b)) }
        }
    }

    /// The broadcast request of a run; a no-storage channel takes only expiration 0
    /// (reference §4.2, §8.6).
    func broadcastSubmit(_ id: RunID) -> BroadcastSubmit? {
        guard let run = runs[id], run.broadcastPending, let ch = channels[run.channelNum] else { return nil }
        let now = clock.nowSeconds()
        let expiration: Int64
        switch ch.channel.storagePolicy {
        case .none: expiration = 0
        case .mostRecent:
            let cap = now + Int64(config.broadcastStorage)
            expiration = min(run.record.expiration ?? cap, cap)
        }
        return BroadcastSubmit(
            run: id, environment: ch.channel.environment, bundleID: ch.channel.bundleID, apnsChannelID: ch.channel.apnsChannelID,
            priority: run.priority, expiration: expiration, payload: run.record.payload)
    }

    /// The next batch of a run: its refused batch again, or a scan. Nothing while the sender
    /// has enough of it in flight, or the duplicate window is full.
    mutating func nextBatch(_ id: RunID, _ actions: inout [FanoutAction]) {
        guard let run = runs[id], let ch = channels[run.channelNum], !run.scanning else { return }
        if let b = run.unsubmitted {
            actions.append(
                .submit(
                    BatchSubmit(
                        run: id, environment: ch.channel.environment, batch: b.ordinal, tokens: b.tokens, express: b.express,
                        bundleID: ch.channel.bundleID)))
            return
        }
        guard !run.scanDone, run.inFlight.count < config.maxBatchesInFlight else { return }
        guard run.scanFailures == 0 || clock.now() >= run.scanRetryAt else { return }
        // The duplicate window: never more than this many batches past the last committed
        // checkpoint (unless checkpoints cannot be written at all).
        guard run.checkpointFailing || run.batchesRead - run.batchesCommitted < config.maxBatchesPastCheckpoint else { return }
        runs[id]?.scanning = true
        actions.append(.scan(scanRequest(run, ch)))
    }

    func scanRequest(_ run: RunState, _ ch: ChannelState) -> ScanRequest {
        ScanRequest(
            run: run.id, channelNum: ch.channel.num, kind: run.kind, shards: run.shards, after: run.scanCursor,
            before: run.scanWrapped ? run.passStart : nil, limit: config.batchSize)
    }

    /// Tokens read for a run's pass.
    public mutating func batchScanned(_ id: RunID, _ rows: TokenRows) -> [FanoutAction] {
        guard runs[id] != nil else { return [] }
        runs[id]?.scanning = false
        runs[id]?.scanFailures = 0
        var actions: [FanoutAction] = []
        // The lease ran out while the rows were read: they are not sent (the channel is given
        // up, and the run with it).
        if let num = runs[id]?.channelNum, !leaseHolds(num, &actions) {
            return actions + releaseIfDone(id)
        }
        guard var run = runs[id] else { return actions }
        if rows.count < config.batchSize && (run.scanWrapped || run.passStart.isEmpty) {
            run.scanDone = true
        } else if rows.isEmpty {
            run.scanWrapped = true
            run.scanCursor = []
            if let ch = channels[run.channelNum], !run.stopped {
                run.scanning = true
                runs[id] = run
                return [.scan(scanRequest(run, ch))]
            }
        }
        guard !rows.isEmpty, !run.stopped, let ch = channels[run.channelNum] else {
            if run.scanDone { progressed = true }
            runs[id] = run
            releaseOrFinish(id, &actions)
            return actions
        }
        // The whole audience in one batch: the sender's express lane, ahead of the bulk of
        // large fan-outs (fairness; design, delivery 7).
        let express = run.batchesRead == 0 && run.scanDone
        let b = BatchState(ordinal: run.batchesRead, tokens: rows, wrapped: run.scanWrapped, express: express)
        run.batchesRead += 1
        run.scanCursor = b.last
        if !run.scanDone && rows.count < config.batchSize && !run.scanWrapped {
            // Phase one ended inside this batch: continue with the wrap-around.
            run.scanWrapped = true
            run.scanCursor = []
        }
        run.unsubmitted = b
        runs[id] = run
        progressed = true
        return [
            .submit(
                BatchSubmit(
                    run: id, environment: ch.channel.environment, batch: b.ordinal, tokens: b.tokens, express: express,
                    bundleID: ch.channel.bundleID))
        ]
    }

    /// The scan failed (logged by the engine): tried again after `config.scanRetry`.
    public mutating func scanFailed(_ id: RunID) -> [FanoutAction] {
        if var run = runs[id] {
            run.scanning = false
            run.scanFailures += 1
            run.scanRetryAt = clock.now() + config.scanRetry.bound(run.scanFailures)
            runs[id] = run
        }
        var actions: [FanoutAction] = []
        releaseOrFinish(id, &actions)
        return actions
    }

    /// The sender took the batch (`accepted`) or had no room for it (it is offered again).
    public mutating func submitted(_ id: RunID, batch: Int, accepted: Bool) -> [FanoutAction] {
        guard var run = runs[id], let b = run.unsubmitted, b.ordinal == batch else { return [] }
        var actions: [FanoutAction] = []
        if accepted {
            run.unsubmitted = nil
            run.inFlight.append(b)
            run.outstanding += b.tokens.count
            progressed = true
            if run.firstPushAt == nil {
                let now = clock.now()
                run.firstPushAt = now
                metrics.firstPush.observe(max(0, now - Double(run.record.createdAtMillis) / 1000))
            }
        }
        runs[id] = run
        afterStep(id, &actions)
        return actions
    }

    /// A stopped or finished run of a closed channel goes; an active one finishes.
    mutating func releaseOrFinish(_ id: RunID, _ actions: inout [FanoutAction]) {
        guard let run = runs[id] else { return }
        if run.orphaned {
            actions += releaseIfDone(id)
        } else {
            afterStep(id, &actions)
        }
    }

    /// Records the final state of a run (after its last prunes are written).
    mutating func finish(_ id: RunID, _ actions: inout [FanoutAction]) {
        guard var run = runs[id], !run.finishing else { return }
        run.finishing = true
        // A batch the sender had no room for when the run stopped is never sent.
        run.unsubmitted = nil
        runs[id] = run
        progressed = true
        flushPrunes(id, final: true, &actions)
        if runs[id]?.pendingPrunes == 0 { completeFinish(id, &actions) }
    }

    mutating func completeFinish(_ id: RunID, _ actions: inout [FanoutAction]) {
        guard var run = runs[id] else { return }
        var state = run.stopState ?? .done
        if run.stopState == nil && run.usesTokens == false && run.record.broadcastState == .failed { state = .failed }
        if state == .superseded { run.counters.skipped = run.unreached }
        if run.counters.targets < run.counters.sent + run.counters.failed + run.counters.pruned {
            run.counters.targets = run.counters.sent + run.counters.failed + run.counters.pruned
        }
        runs[id] = nil
        if state == .done, channels[run.channelNum]?.lease.validFor != nil {
            finishedHere[run.record.id, default: .empty] = finishedHere[run.record.id, default: .empty].union(run.shards)
        }
        actions.append(
            .finish(
                FinishRecord(
                    eventID: run.record.id, shards: run.shards, state: state, counters: run.counters, reason: run.stopReason,
                    supersededBy: run.supersededBy)))
        actions.append(.release(id))
        let now = clock.now()
        if run.started {
            metrics.activeEvents.add(-1)
            metrics.duration.observe(max(0, now - run.startedAt))
        }
        metrics.events(run.record.kind.rawValue, state.rawValue).inc()
        logger.info(
            "fanout.event_finished",
            [
                "event_id": .string(run.record.id), "channel": .string(run.record.channelID), "state": .string(state.rawValue),
                "targets": .int(run.counters.targets), "sent": .int(run.counters.sent), "failed": .int(run.counters.failed),
                "pruned": .int(run.counters.pruned), "retried": .int(run.counters.retried), "skipped": .int(run.counters.skipped),
                "reason": run.stopReason.map { .string($0) } ?? .null,
                "seconds": .double(run.started ? now - run.startedAt : 0),
            ])
    }

    /// Checkpoints, final states to write again, sweeps.
    public mutating func housekeeping() -> [FanoutAction] {
        let now = clock.now()
        var actions: [FanoutAction] = []
        for ch in channels.values {
            // Not a stopped run (superseded, failed, channel closed): its unsent requests come
            // back cancelled and complete their batches, so its checkpoint would move over
            // tokens that never got the event. The event that superseded it starts from the
            // checkpoint it had when it stopped (and wraps around), so nothing is lost.
            for id in [ch.active].compactMap({ $0 }) + ch.draining + ch.helpers {
                guard var run = runs[id], run.started, !run.stopped else { continue }
                // Every interval, and as soon as half the duplicate window is answered (so
                // the window rarely holds the sender back).
                let due =
                    now - run.lastCheckpointWrite >= config.checkpointInterval
                    || run.batchesCheckpointed - run.batchesWritten >= max(1, config.maxBatchesPastCheckpoint / 2)
                guard run.checkpointDirty && due else { continue }
                run.checkpointDirty = false
                run.lastCheckpointWrite = now
                run.batchesWritten = run.batchesCheckpointed
                runs[id] = run
                actions.append(
                    .checkpoint(
                        CheckpointWrite(
                            run: id, eventID: run.record.id, shards: run.shards, cursor: run.checkpointCursor,
                            wrapped: run.checkpointWrapped, counters: run.counters, batches: run.batchesCheckpointed)))
            }
        }
        if !unrecordedFinishes.isEmpty && now - lastFinishRetry >= config.checkpointInterval {
            lastFinishRetry = now
            actions.append(.retryFinishes(unrecordedFinishes))
        }
        leaseHousekeeping(&actions)
        updateGauges()
        if now - lastSweep >= config.sweepInterval {
            lastSweep = now
            actions.append(.sweep(retentionMillis: Int64(config.eventRetention * 1000)))
        }
        return actions
    }

    /// Seconds to sleep when nothing progressed: until the next timer, at most `idle` (a
    /// notice or an answer wakes the engine sooner), `busy` while requests are in flight.
    public func nextWait(idle: Double, busy: Double) -> Double {
        var w = idle
        let now = clock.now()
        if !pendingBroadcasts.isEmpty { return busy }
        for ch in channels.values {
            if let a = ch.active, let run = runs[a], run.outstanding > 0 || run.unsubmitted != nil || run.broadcastPending {
                return busy
            }
            if !ch.draining.isEmpty || !ch.helpers.isEmpty { return busy }
            if let a = ch.active, let run = runs[a], run.scanFailures > 0 { w = min(w, max(0.001, run.scanRetryAt - now)) }
            if let next = ch.pending.first, next.kind == .update, ch.channel.minIntervalMillis > 0, ch.active == nil {
                let due = ch.lastUpdateStart + Double(ch.channel.minIntervalMillis) / 1000
                w = min(w, max(0.001, due - now))
            }
        }
        return w
    }
}
