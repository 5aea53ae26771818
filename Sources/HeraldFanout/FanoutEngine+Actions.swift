import Foundation
import HeraldAPNS
import HeraldCore
import HeraldNet
import HeraldSender
import HeraldStore

extension FanoutEngine {
    /// Executes one action; returns what the scheduler decided from its outcome.
    func perform(_ action: FanoutAction) -> [FanoutAction] {
        switch action {
        case .loadEvents(let num, let after, let through):
            do {
                let shards = scheduler.lease(channelNum: num)?.shards ?? .all
                let events = try store.unfinishedEvents(channelNum: num, shards: shards, afterSeq: after, throughSeq: through)
                return scheduler.eventsLoaded(channelNum: num, throughSeq: through, events)
            } catch {
                logger.error("fanout.load_failed", ["channel_num": .int(num), "seq": .int(through), "error": .string("\(error)")])
                return []
            }
        case .start(let s):
            start(s)
            return []
        case .scan(let r):
            do {
                if scanner == nil { scanner = try store.makeScanner() }
                let rows = try scanner!.next(
                    channelNum: r.channelNum, kind: r.kind, shards: r.shards, after: r.after, before: r.before, now: clock.nowSeconds(),
                    limit: r.limit)
                return scheduler.batchScanned(r.run, rows)
            } catch {
                logger.error("fanout.scan_failed", ["run": .string("\(r.run)"), "error": .string("\(error)")])
                return scheduler.scanFailed(r.run)
            }
        case .submit(let b): return submit(b)
        case .broadcast(let b): return submitBroadcast(b)
        case .cancel(let id):
            templates[id]?.cancel()
            for (_, c) in catchUpTemplates where c.source == .run(id) { c.template.cancel() }
            return []
        case .checkpoint(let c):
            let id = c.run
            let batches = c.batches
            store.checkpoint(eventID: c.eventID, shards: c.shards, cursor: c.cursor, wrapped: c.wrapped, counters: c.counters) {
                [weak self] error in
                if error is LeaseLost {
                    self?.post(.leaseLost(id))
                } else {
                    self?.post(error.map { .checkpointFailed(id, error: "\($0)") } ?? .checkpointed(id, batches: batches))
                }
            }
            return []
        case .prune(let p):
            do {
                // With an observer, a storage that can records the webhook report in the prune's
                // transaction (a crash loses none).
                let o = observer.get()
                let reporting = reports
                let n =
                    try reporting?.pruneReporting(channelNum: p.channelNum, p.items, reason: p.reason.rawValue)
                    ?? store.prune(channelNum: p.channelNum, p.items)
                if n > 0, let o { o.subscriptionsPruned(p, removed: n, recorded: reporting != nil) }
                return scheduler.pruned(p, removed: n)
            } catch {
                if p.run != nil {
                    logger.warning("fanout.prune_failed", ["channel_num": .int(p.channelNum), "error": .string("\(error)")])
                }
                return scheduler.pruned(p, removed: nil)
            }
        case .finish(let f):
            // Queued, not waited for (a stream of superseded updates would otherwise cost the
            // thread one commit each, and it would fall behind the publishers). If the
            // database refuses it, it is written again until taken (housekeeping).
            let reporting = reports
            let recorded = reporting != nil
            let completion: @Sendable (Error?) -> Void = { [weak self] error in
                guard let error else {
                    self?.observer.get()?.eventFinished(f, recorded: recorded)
                    return
                }
                // Lost lease: the new holder finishes those shards.
                guard !(error is LeaseLost) else { return }
                self?.post(.finishFailed(f, error: "\(error)"))
            }
            if let reporting {
                reporting.finishEventReporting(
                    eventID: f.eventID, shards: f.shards, state: f.state, counters: f.counters, reason: f.reason,
                    supersededBy: f.supersededBy, completion: completion)
            } else {
                store.finishEvent(
                    eventID: f.eventID, shards: f.shards, state: f.state, counters: f.counters, reason: f.reason,
                    supersededBy: f.supersededBy, completion: completion)
            }
            return []
        case .retryFinishes(let list):
            for f in list {
                var ok = true
                var written = true
                do {
                    try store.finishEvent(
                        eventID: f.eventID, shards: f.shards, state: f.state, counters: f.counters, reason: f.reason,
                        supersededBy: f.supersededBy)
                } catch {
                    written = false
                    ok = error is LeaseLost  // the new holder finishes those shards
                }
                scheduler.finishRetried(f, recorded: ok)
                if written { observer.get()?.eventFinished(f, recorded: false) }
            }
            return []
        case .recordBroadcast(let id, let state, let reason):
            do {
                try store.setBroadcastState(eventID: id, state: state, reason: reason)
            } catch {
                logger.warning("fanout.broadcast_state_failed", ["event_id": .string(id), "error": .string("\(error)")])
            }
            return []
        case .lookUpCurrent(let num, let known):
            do {
                let id = try store.channel(num: num)?.currentEvent
                let record = try id.flatMap { known.contains($0) ? nil : try store.event(id: $0) }
                return scheduler.currentStateRead(channelNum: num, eventID: id, record: record)
            } catch {
                logger.warning("fanout.catchup_failed", ["channel_num": .int(num), "error": .string("\(error)")])
                return scheduler.currentStateRead(channelNum: num, eventID: nil, record: nil)
            }
        case .catchUp(let c): return submitCatchUps(c)
        case .release(let id):
            templates[id] = nil
            unsubmitted[id] = nil
            broadcastRequests[id] = nil
            runChannels[id] = nil
            return []
        case .releaseLease(let lease):
            store.releaseLease(lease)
            // Catch-ups still queued in the sender are this lease's no more.
            catchUpTemplates[lease.channelNum]?.template.cancel()
            catchUpTemplates[lease.channelNum] = nil
            return []
        case .releaseShards(let lease):
            store.releaseLease(lease)
            return []
        case .renewLeases(let leases):
            let askedAt = leaseClock.now()
            var next: [FanoutAction] = []
            do {
                let renewed = try store.renewLeases(leases)
                for l in leases { next += scheduler.leaseRenewed(channelNum: l.channelNum, renewed[l.channelNum] ?? nil, askedAt: askedAt) }
            } catch {
                logger.warning("fanout.lease_renew_failed", ["channels": .int(Int64(leases.count)), "error": .string("\(error)")])
                for l in leases { next += scheduler.leaseRenewed(channelNum: l.channelNum, nil, askedAt: askedAt, failed: true) }
            }
            return next
        case .poll:
            do {
                try store.heartbeat()
                return scheduler.polled(unfinished: try store.unfinishedEvents())
            } catch {
                logger.warning("fanout.poll_failed", ["error": .string("\(error)")])
                return []
            }
        case .acquire(let num):
            do {
                _ = try ensureChannel(num)
            } catch {
                logger.warning("fanout.acquire_failed", ["channel_num": .int(num), "error": .string("\(error)")])
            }
            return []
        case .refresh(let num):
            let askedAt = leaseClock.now()
            do {
                // While the channel is sending, only the shards gained are read (taken over mid-event).
                let held = scheduler.refreshesMidEvent(channelNum: num) ? scheduler.lease(channelNum: num)?.shards ?? .empty : .empty
                let lease = try store.claimShare(channelNum: num)
                let events = try lease.map { l in
                    let shards = l.shards.subtracting(held)
                    return shards.isEmpty ? [] : try store.unfinishedEvents(channelNum: num, shards: shards, afterSeq: 0, throughSeq: .max)
                }
                return scheduler.leaseRefreshed(channelNum: num, lease, askedAt: askedAt, events: events ?? [])
            } catch {
                logger.warning("fanout.refresh_failed", ["channel_num": .int(num), "error": .string("\(error)")])
                scheduler.refreshFailed(channelNum: num)
                return []
            }
        case .leaseDeadline(let num, let until):
            let nanos = monotonicNanos(until)
            for (run, ch) in runChannels where ch == num { templates[run]?.setDeadline(monotonicNanos: nanos) }
            catchUpTemplates[num]?.template.setDeadline(monotonicNanos: nanos)
            return []
        case .sweep(let retention):
            sweep(retentionMillis: retention)
            return []
        case .guardTripped(let eventID, let channelID, let share):
            observer.get()?.pruneGuardTripped(eventID: eventID, channelID: channelID, share: share)
            return []
        case .readPruneGuard(let run, let eventID, let shards):
            do {
                // A backend that stores no tally: the run's own answers are all there is.
                let tally =
                    try store.pruneGuardTally(eventID: eventID, excluding: shards) ?? PruneGuardTally(startedShards: 1, shardCount: 1)
                return scheduler.pruneGuardRead(run, tally)
            } catch {
                logger.warning("fanout.prune_guard_read_failed", ["event_id": .string(eventID), "error": .string("\(error)")])
                return scheduler.pruneGuardRead(run, nil)
            }
        case .recordPruneGuardTrip(let trip):
            var first = true
            do {
                first = try store.recordPruneGuardTrip(eventID: trip.eventID)
            } catch {
                // Not stored: report it here (the others may trip and report it too).
                logger.warning("fanout.prune_guard_record_failed", ["event_id": .string(trip.eventID), "error": .string("\(error)")])
            }
            return scheduler.pruneGuardTripRecorded(trip, first: first)
        }
    }

    /// Records the event sending (queued: its checkpoints and end are queued after it, so
    /// they never land before it), makes its token template and counts its targets in the
    /// background.
    private func start(_ s: RunStart) {
        let id = s.run
        let eventID = s.eventID
        store.markSending(eventID: eventID, shards: s.shards, targets: s.targets, passStart: s.passStart, priority: s.priority) {
            [weak self] error in
            guard let self, let error else { return }
            if error is LeaseLost {
                self.post(.leaseLost(id))
                return
            }
            self.logger.error("fanout.mark_sending_failed", ["event_id": .string(eventID), "error": .string("\(error)")])
            self.post(.checkpointFailed(id, error: "\(error)"))
        }
        guard s.usesTokens else { return }
        let template = APNSTemplate(
            headers: HeaderList(APNSRequests.tokenPushFields(bundleID: s.bundleID, priority: s.priority, expiration: s.expiration)),
            body: HTTP2Body(s.payload), sink: RunSink(engine: self, run: id, batchSize: config.batchSize),
            keepResponseHeaders: false, generatesAPNSID: true)
        if let d = s.deadline { template.setDeadline(monotonicNanos: monotonicNanos(d)) }
        templates[id] = template
        runChannels[id] = s.channelNum
        let store = self.store
        let num = s.channelNum
        let kind = s.kind
        let shards = s.shards
        let logger = self.logger
        background { [weak self] in
            do {
                self?.post(.targets(id, try store.countSubscriptions(channelNum: num, kind: kind, shards: shards)))
            } catch {
                // Its counters then say what it sent; a superseded run's final state waits for this.
                logger.warning("fanout.count_failed", ["event_id": .string(eventID), "error": .string("\(error)")])
                self?.post(.targets(id, nil))
            }
        }
    }

    /// Hands a batch to the sender without blocking; a refused batch keeps its requests.
    private func submit(_ b: BatchSubmit) -> [FanoutAction] {
        var requests: [APNSRequest]
        if let cached = unsubmitted[b.run], cached.batch == b.batch {
            requests = cached.requests
        } else {
            guard let template = templates[b.run] else { return scheduler.submitted(b.run, batch: b.batch, accepted: false) }
            requests = []
            requests.reserveCapacity(b.tokens.count)
            let base = b.batch * config.batchSize
            for i in b.tokens.indices {
                // The token's bytes in place in the batch's buffer (hex into the request's path).
                let r = b.tokens.withToken(i) { requestStock.take(token: $0, template: template, index: base + i) }
                r.express = b.express
                requests.append(r)
            }
        }
        let accepted = transports.tokens(b.environment, bundleID: b.bundleID).trySubmit(requests)
        unsubmitted[b.run] = accepted ? nil : (b.batch, requests)
        return scheduler.submitted(b.run, batch: b.batch, accepted: accepted)
    }

    private func submitBroadcast(_ b: BroadcastSubmit) -> [FanoutAction] {
        guard let transport = transports.broadcast(b.environment, bundleID: b.bundleID), let channelID = b.apnsChannelID else {
            return scheduler.broadcastSubmitted(b.run, accepted: false, unavailable: true)
        }
        let req: APNSRequest
        if let waiting = broadcastRequests[b.run] {
            req = waiting
        } else {
            var fields = HeaderList(APNSRequests.broadcastFields(channelID: channelID, priority: b.priority, expiration: b.expiration))
            fields.append("apns-request-id", Identifiers.lowercaseUUID(using: &random), noIndex: true)
            let template = APNSTemplate(headers: HeaderList(), body: HTTP2Body(b.payload), sink: BroadcastSink(engine: self, run: b.run))
            req = APNSRequest(path: APNSRequests.broadcastPath(bundleID: b.bundleID), headers: fields, template: template)
        }
        let accepted = transport.trySubmit([req])
        broadcastRequests[b.run] = accepted ? nil : req
        return scheduler.broadcastSubmitted(b.run, accepted: accepted)
    }

    /// Late joiners' catch-ups, each one request in the express lane.
    private func submitCatchUps(_ c: CatchUpSubmit) -> [FanoutAction] {
        let key: CatchUpKey
        switch c.source {
        case .run(let id): key = .run(id)
        case .event(let e): key = .event(e.id)
        }
        let template: APNSTemplate
        if let t = catchUpTemplates[c.channelNum], t.source == key {
            template = t.template
        } else {
            let sink = CatchUpSink(engine: self, channel: c.channelNum)
            switch c.source {
            case .run(let id):
                // The running event's own bytes; cancelled with it.
                guard let t = templates[id] else { return scheduler.catchUpSubmitted(accepted: false) }
                template = APNSTemplate(headers: t.headers, body: t.body, sink: sink, keepResponseHeaders: false, generatesAPNSID: true)
            case .event(let e):
                template = APNSTemplate(
                    headers: HeaderList(APNSRequests.tokenPushFields(bundleID: c.bundleID, priority: e.priority, expiration: e.expiration)),
                    body: HTTP2Body(e.payload), sink: sink, generatesAPNSID: true)
            }
            catchUpTemplates[c.channelNum] = (key, template)
        }
        if let d = c.deadline { template.setDeadline(monotonicNanos: monotonicNanos(d)) }
        let requests = c.items.map { item in
            let r = requestStock.take(token: item.token, template: template, index: item.id)
            r.express = true
            return r
        }
        return scheduler.catchUpSubmitted(accepted: transports.tokens(c.environment, bundleID: c.bundleID).trySubmit(requests))
    }

    /// `until` on the lease clock as `Monotonic.nanos()` (what the sender compares).
    func monotonicNanos(_ until: Double) -> UInt64 {
        let left = max(0, until - leaseClock.now())
        return Monotonic.nanos() &+ UInt64(left * 1e9)
    }

    /// Expired subscriptions and old events, in the background (not on the engine thread).
    private func sweep(retentionMillis: Int64) {
        let store = self.store
        let logger = self.logger
        let metrics = self.metrics
        let sweepsSubscriptions = config.sweepsSubscriptions
        background {
            do {
                let subs = sweepsSubscriptions ? try store.sweepExpiredSubscriptions(limit: 100_000) : 0
                let (activity, pushToStart) = try store.subscriptionTotals()
                metrics.subscriptions(.activity).set(Double(activity))
                metrics.subscriptions(.pushToStart).set(Double(pushToStart))
                let events = try store.sweepEvents(olderThanMillis: retentionMillis)
                if subs + events > 0 {
                    logger.info("store.swept", ["subscriptions": .int(Int64(subs)), "events": .int(Int64(events))])
                }
            } catch {
                logger.warning("store.sweep_failed", ["error": .string("\(error)")])
            }
        }
    }
}

/// The answers of one run's token requests: the request's index is its place in the run
/// (batch × batch size + slot). Called on the sender's loop: only enqueues.
final class RunSink: APNSResultSink {
    weak let engine: FanoutEngine?
    let run: RunID
    let batchSize: Int

    init(engine: FanoutEngine, run: RunID, batchSize: Int) {
        self.engine = engine
        self.run = run
        self.batchSize = batchSize
    }

    func apnsCompleted(_ r: APNSRequest, result: APNSResult) {
        engine?.post(answer: result, of: r, run: run, batchSize: batchSize)
    }

    /// A loop turn's answers of this run: one lock for all of them.
    func apnsCompleted(_ batch: ArraySlice<APNSCompletion>) { engine?.post(answers: batch, run: run, batchSize: batchSize) }
}

/// The answer of one run's broadcast request.
final class BroadcastSink: APNSResultSink {
    weak let engine: FanoutEngine?
    let run: RunID

    init(engine: FanoutEngine, run: RunID) {
        self.engine = engine
        self.run = run
    }

    func apnsCompleted(_ r: APNSRequest, result: APNSResult) {
        engine?.post(.answer(.broadcast(run: run), result, r))
    }
}

/// The answers of a channel's catch-ups: the request's index is the catch-up's id.
final class CatchUpSink: APNSResultSink {
    weak let engine: FanoutEngine?
    let channel: Int64

    init(engine: FanoutEngine, channel: Int64) {
        self.engine = engine
        self.channel = channel
    }

    func apnsCompleted(_ r: APNSRequest, result: APNSResult) {
        engine?.post(.answer(.catchUp(channel: channel, id: r.index), result, r))
    }
}
