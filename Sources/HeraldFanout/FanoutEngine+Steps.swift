import Foundation
import HeraldAPNS
import HeraldCore
import HeraldNet
import HeraldSender
import HeraldStore

extension FanoutEngine {
    /// One round: every channel with work gets one step (a batch), round robin — so a
    /// channel with ten subscribers is never stuck behind one with a million (delivery 7).
    /// Returns true when anything progressed.
    func step() -> Bool {
        var progress = false
        let n = order.count
        guard n > 0 else { return flushCatchUps() }
        for k in 0..<n {
            let num = order[(rr + k) % n]
            guard let ch = channels[num] else { continue }
            if stepChannel(ch) { progress = true }
        }
        rr = (rr + 1) % max(1, order.count)
        if flushCatchUps() { progress = true }
        return progress
    }

    private func stepChannel(_ ch: ChannelRun) -> Bool {
        var progress = false
        // Superseded runs finish once their last requests are answered.
        for r in ch.draining where r.outstanding == 0 && !r.broadcastPending {
            finish(r, in: ch)
            progress = true
        }
        ch.draining.removeAll { $0.outstanding == 0 && !$0.broadcastPending }
        if ch.active == nil {
            progress = selectNext(ch) || progress
        }
        guard let run = ch.active else { return progress }
        if !run.started {
            // Nothing of the new event goes out while an older one (or a late joiner's
            // catch-up) still has requests in flight: per token, never an older event after
            // a newer one (delivery 4).
            guard ch.draining.isEmpty, ch.catchUpsInFlight == 0 else { return progress }
            start(run, in: ch)
            progress = true
        }
        if run.stopped {
            if run.outstanding == 0 && !run.broadcastPending {
                finish(run, in: ch)
                ch.active = nil
                return true
            }
            return progress
        }
        if sendNextBatch(run, ch) { progress = true }
        if run.finished {
            finish(run, in: ch)
            ch.active = nil
            progress = true
        }
        return progress
    }

    /// Picks the next pending event, superseding queued updates that a later update or end
    /// (before any start) makes pointless.
    private func selectNext(_ ch: ChannelRun) -> Bool {
        var progress = false
        while ch.active == nil, let e = ch.pending.first {
            // The next update or end queued before any start supersedes a queued update.
            let newer = e.kind == .update ? ch.pending.dropFirst().prefix(while: { $0.kind != .start }).first : nil
            if let newer {
                ch.pending.removeFirst()
                let r = EventRun(record: e, channel: ch.channel)
                r.stopped = true
                r.stopState = .superseded
                r.supersededBy = newer.id
                if let c = e.cursor { ch.inheritedStart = c }
                metrics.superseded.inc()
                finish(r, in: ch)
                progress = true
                continue
            }
            if e.kind == .update, ch.channel.minIntervalMillis > 0,
                clock.now() < ch.lastUpdateStart + Double(ch.channel.minIntervalMillis) / 1000
            {
                return progress
            }
            ch.pending.removeFirst()
            let r = EventRun(record: e, channel: ch.channel)
            if e.passStart == nil, let inherited = ch.inheritedStart {
                r.passStart = inherited
                r.scanCursor = inherited
                r.checkpointCursor = inherited
            }
            ch.inheritedStart = nil
            ch.active = r
            progress = true
        }
        return progress
    }

    /// Marks the event sending, applies the priority budget, submits the broadcast part,
    /// and counts its targets in the background.
    private func start(_ run: EventRun, in ch: ChannelRun) {
        let now = clock.now()
        run.started = true
        run.startedAt = now
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
        // Queued, not waited for: the scheduler must not wait for a commit per event. Its
        // checkpoints and end are queued after it, so they never land before it; if it
        // fails, checkpoints of an event the database does not know is sending are not kept.
        let id = run.record.id
        store.markSending(eventID: id, shards: ch.lease.shards, targets: run.counters.targets, passStart: run.passStart, priority: run.priority) {
            [weak self] error in
            guard let self, let error else { return }
            self.logger.error("fanout.mark_sending_failed", ["event_id": .string(id), "error": .string("\(error)")])
            self.post(.checkpointFailed(eventID: id, error: "\(error)"))
        }
        metrics.activeEvents.add(1)
        if run.usesTokens {
            run.template = APNSTemplate(
                headers: HeaderList(
                    APNSRequests.tokenPushFields(bundleID: ch.channel.bundleID, priority: run.priority, expiration: run.record.expiration)),
                body: HTTP2Body(run.record.payload), sink: self, keepResponseHeaders: false, generatesAPNSID: true)
            let store = self.store
            let num = ch.channel.num
            let kind = run.kind
            let id = run.record.id
            DispatchQueue.global().async { [weak self] in
                if let n = try? store.countSubscriptions(channelNum: num, kind: kind) { self?.post(.targets(eventID: id, count: n)) }
            }
        }
        if run.usesBroadcast { submitBroadcast(run, ch) }
        logger.info(
            "fanout.event_started",
            ["event_id": .string(run.record.id), "channel": .string(ch.channel.id), "kind": .string(run.record.kind.rawValue),
             "seq": .int(run.record.seq), "priority": .int(Int64(run.priority)), "resumed": .bool(run.record.cursor != nil)])
    }

    private func submitBroadcast(_ run: EventRun, _ ch: ChannelRun) {
        guard let transport = transports.broadcast(ch.channel.environment), let channelID = ch.channel.apnsChannelID else {
            run.broadcastPending = false
            try? store.setBroadcastState(eventID: run.record.id, state: .failed, reason: "no broadcast connection configured")
            return
        }
        // A no-storage channel takes only expiration 0 (reference §4.2, §8.6).
        let now = clock.nowSeconds()
        let expiration: Int64
        switch ch.channel.storagePolicy {
        case .none: expiration = 0
        case .mostRecent:
            let cap = now + Int64(config.broadcastStorage)
            expiration = min(run.record.expiration.map { $0 == 0 ? 0 : $0 } ?? cap, cap)
        }
        var fields = HeaderList(APNSRequests.broadcastFields(channelID: channelID, priority: run.priority, expiration: expiration))
        fields.append("apns-request-id", Identifiers.lowercaseUUID(using: &random), noIndex: true)
        let template = APNSTemplate(headers: HeaderList(), body: HTTP2Body(run.record.payload), sink: self)
        let req = APNSRequest(path: APNSRequests.broadcastPath(bundleID: ch.channel.bundleID), headers: fields, template: template, context: run)
        if !transport.trySubmit([req]) {
            // Full: the request waits until the next round.
            pendingBroadcasts.append((req, ch.channel.environment))
        }
    }

    /// Reads the next batch of tokens and hands it to the sender. False when nothing moved
    /// (sender full, in-flight limit reached, or scan done).
    private func sendNextBatch(_ run: EventRun, _ ch: ChannelRun) -> Bool {
        let tokens = transports.tokens(ch.channel.environment)
        if let b = run.unsubmitted {
            guard tokens.trySubmit(b.requests) else { return false }
            // The requests point at their batch; the batch must not keep them (a cycle).
            b.requests = []
            run.unsubmitted = nil
            run.inFlight.append(b)
            run.outstanding += b.tokens.count
            noteFirstPush(run)
            return true
        }
        guard !run.scanDone, run.inFlight.count < config.maxBatchesInFlight, let scanner else { return false }
        // The duplicate window: never more than this many batches past the last committed
        // checkpoint (unless checkpoints cannot be written at all).
        guard run.checkpointFailing || run.batchesRead - run.batchesCommitted < config.maxBatchesPastCheckpoint else {
            return false
        }
        var rows: [(token: [UInt8], registeredAtMillis: Int64)] = []
        do {
            while true {
                rows = try scanner.next(
                    channelNum: ch.channel.num, kind: run.kind, shards: ch.lease.shards, after: run.scanCursor,
                    before: run.scanWrapped ? run.passStart : nil, now: clock.nowSeconds(), limit: config.batchSize)
                if rows.count < config.batchSize && (run.scanWrapped || run.passStart.isEmpty) {
                    run.scanDone = true
                    break
                }
                if rows.isEmpty {
                    run.scanWrapped = true
                    run.scanCursor = []
                    continue
                }
                break
            }
        } catch {
            logger.error("fanout.scan_failed", ["event_id": .string(run.record.id), "error": .string("\(error)")])
            return false
        }
        guard !rows.isEmpty else { return run.scanDone }
        // The whole audience in one batch: the sender's express lane, ahead of the bulk of
        // large fan-outs (fairness; design, delivery 7).
        let express = run.batchesRead == 0 && run.scanDone
        let b = Batch(
            run: run, ordinal: run.batchesRead, tokens: rows.map(\.token), registeredAt: rows.map(\.registeredAtMillis),
            wrapped: run.scanWrapped)
        run.batchesRead += 1
        run.scanCursor = b.last
        if !run.scanDone && rows.count < config.batchSize && !run.scanWrapped {
            // Phase one ended inside this batch: continue with the wrap-around.
            run.scanWrapped = true
            run.scanCursor = []
        }
        let template = run.template!
        b.requests.reserveCapacity(rows.count)
        for (i, t) in b.tokens.enumerated() {
            let r = APNSRequest(path: APNSRequests.tokenPath(Hex.encode(t)), template: template, context: b, index: i)
            r.express = express
            b.requests.append(r)
        }
        if tokens.trySubmit(b.requests) {
            b.requests = []
            run.inFlight.append(b)
            run.outstanding += b.tokens.count
            noteFirstPush(run)
        } else {
            run.unsubmitted = b
        }
        return true
    }

    private func noteFirstPush(_ run: EventRun) {
        guard run.firstPushAt == nil else { return }
        let now = clock.now()
        run.firstPushAt = now
        metrics.firstPush.observe(max(0, now - Double(run.record.createdAtMillis) / 1000))
    }

    /// Records the final state of a run.
    func finish(_ run: EventRun, in ch: ChannelRun) {
        // A batch the sender had no room for when the run stopped is never sent; its
        // requests point back at it (their context), so it must let go of them or the pair
        // outlives the run.
        run.unsubmitted?.requests = []
        run.unsubmitted = nil
        flushPrunes(run, ch, final: true)
        var state = run.stopState ?? .done
        if run.stopState == nil && run.usesTokens == false && run.record.broadcastState == .failed { state = .failed }
        if state == .superseded { run.counters.skipped = run.unreached }
        if run.counters.targets < run.counters.sent + run.counters.failed + run.counters.pruned {
            run.counters.targets = run.counters.sent + run.counters.failed + run.counters.pruned
        }
        // Queued, not waited for (a stream of superseded updates would otherwise cost the
        // scheduler one commit each, and it would fall behind the publishers). If the
        // database refuses it, it is written again until taken (housekeeping), so the event
        // does not stay `sending` after the disk recovers.
        let end = UnrecordedFinish(
            eventID: run.record.id, shards: ch.lease.shards, state: state, counters: run.counters, reason: run.stopReason, supersededBy: run.supersededBy)
        store.finishEvent(
            eventID: end.eventID, shards: end.shards, state: end.state, counters: end.counters, reason: end.reason, supersededBy: end.supersededBy
        ) { [weak self] error in
            guard let error else { return }
            self?.post(.finishFailed(end, error: "\(error)"))
        }
        if run.started {
            metrics.activeEvents.add(-1)
            metrics.duration.observe(max(0, clock.now() - run.startedAt))
        }
        metrics.events(run.record.kind.rawValue, state.rawValue).inc()
        logger.info(
            "fanout.event_finished",
            ["event_id": .string(run.record.id), "channel": .string(ch.channel.id), "state": .string(state.rawValue),
             "targets": .int(run.counters.targets), "sent": .int(run.counters.sent), "failed": .int(run.counters.failed),
             "pruned": .int(run.counters.pruned), "retried": .int(run.counters.retried), "skipped": .int(run.counters.skipped),
             "reason": run.stopReason.map { .string($0) } ?? .null,
             "seconds": .double(run.started ? clock.now() - run.startedAt : 0)])
    }

    /// Checkpoints, broadcasts waiting for room, sweeps.
    func housekeeping() {
        let now = clock.now()
        for ch in channels.values {
            // Not a stopped run (superseded, failed, channel closed): its unsent requests come
            // back cancelled and complete their batches, so its checkpoint would move over
            // tokens that never got the event. The event that superseded it starts from the
            // checkpoint it had when it stopped (and wraps around), so nothing is lost.
            for run in [ch.active].compactMap({ $0 }) + ch.draining where run.started && !run.stopped {
                // Every interval, and as soon as half the duplicate window is answered (so
                // the window rarely holds the sender back).
                let due = now - run.lastCheckpointWrite >= config.checkpointInterval
                    || run.batchesCheckpointed - run.batchesWritten >= max(1, config.maxBatchesPastCheckpoint / 2)
                if run.checkpointDirty && due {
                    run.checkpointDirty = false
                    run.lastCheckpointWrite = now
                    run.batchesWritten = run.batchesCheckpointed
                    let id = run.record.id
                    let batches = run.batchesCheckpointed
                    store.checkpoint(eventID: id, shards: ch.lease.shards, cursor: run.checkpointCursor, wrapped: run.checkpointWrapped, counters: run.counters) {
                        [weak self] error in
                        self?.post(error.map { .checkpointFailed(eventID: id, error: "\($0)") } ?? .checkpointed(eventID: id, batches: batches))
                    }
                }
            }
        }
        if !unrecordedFinishes.isEmpty && now - lastFinishRetry >= config.checkpointInterval {
            lastFinishRetry = now
            unrecordedFinishes = unrecordedFinishes.filter { f in
                do {
                    try store.finishEvent(
                        eventID: f.eventID, shards: f.shards, state: f.state, counters: f.counters, reason: f.reason, supersededBy: f.supersededBy)
                    logger.info("fanout.finish_recorded", ["event_id": .string(f.eventID), "state": .string(f.state.rawValue)])
                    return false
                } catch {
                    return true
                }
            }
        }
        if !pendingBroadcasts.isEmpty {
            let waiting = pendingBroadcasts
            pendingBroadcasts.removeAll()
            for (r, env) in waiting where transports.broadcast(env)?.trySubmit([r]) == false { pendingBroadcasts.append((r, env)) }
        }
        if now - lastSweep >= config.sweepInterval {
            lastSweep = now
            let store = self.store
            let retention = Int64(config.eventRetention * 1000)
            let logger = self.logger
            let metrics = self.metrics
            DispatchQueue.global().async {
                do {
                    let subs = try store.sweepExpiredSubscriptions(limit: 100_000)
                    let (activity, pushToStart) = try store.subscriptionTotals()
                    metrics.subscriptions(.activity).set(Double(activity))
                    metrics.subscriptions(.pushToStart).set(Double(pushToStart))
                    let events = try store.sweepEvents(olderThanMillis: retention)
                    if subs + events > 0 {
                        logger.info("store.swept", ["subscriptions": .int(Int64(subs)), "events": .int(Int64(events))])
                    }
                } catch {
                    logger.warning("store.sweep_failed", ["error": .string("\(error)")])
                }
            }
        }
    }
}
