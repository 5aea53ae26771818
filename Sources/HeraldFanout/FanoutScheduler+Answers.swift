import HeraldAPNS
import HeraldCore
import HeraldSender
import HeraldStore

extension FanoutScheduler {
    /// The sender's final answer for one request. `attempts` and `sentAtMillis` are the
    /// request's (retries counted; a registration after `sentAtMillis` wins over a
    /// `BadDeviceToken`).
    public mutating func answered(_ id: RequestID, _ result: APNSResult, attempts: Int, sentAtMillis: Int64) -> [FanoutAction] {
        var actions: [FanoutAction] = []
        switch id {
        case .token(let run, let batch, let slot): tokenAnswered(run, batch, slot, result, attempts, sentAtMillis, &actions)
        case .broadcast(let run): broadcastAnswered(run, result, &actions)
        case .catchUp(_, let c): catchUpAnswered(c, result, &actions)
        }
        return actions
    }

    mutating func tokenAnswered(
        _ id: RunID, _ batch: Int, _ slot: Int, _ result: APNSResult, _ attempts: Int, _ sentAtMillis: Int64,
        _ actions: inout [FanoutAction]
    ) {
        let answer = TokenAnswer(batch: batch, slot: slot, result: result, attempts: attempts, sentAtMillis: sentAtMillis)
        _ = withUnsafePointer(to: answer) { tokensAnswered(id, UnsafeBufferPointer(start: $0, count: 1), &actions) }
    }

}

extension RunState {
    /// Counts one token answer into the run and moves its checkpoint. Nil: not a batch of it.
    /// The push is counted in `tally` (added to the metrics once per group of answers).
    mutating func apply(
        _ result: APNSResult, batch: Int, slot: Int, attempts: Int, sentAtMillis: Int64, _ tally: inout PushTally
    ) -> (stopReason: String?, prune: Bool, orphaned: Bool)? {
        guard let first = inFlight.first?.ordinal, batch >= first, batch - first < inFlight.count else { return nil }
        let k = batch - first
        outstanding -= 1
        inFlight[k].remaining -= 1
        counters.retried += Int64(max(0, attempts - 1))
        var prune = false
        var stopReason: String?
        switch result {
        case .outcome(.delivered, _):
            counters.sent += 1
            counters.answers += 1
            tally.sent += 1
        case .outcome(.dropToken(_, let since), _):
            counters.answers += 1
            tally.dead += 1
            let token = inFlight[k].tokens[slot]
            if let since {
                unregistered.append((kind, token, since))
            } else {
                // BadDeviceToken has no timestamp: a registration after the request wins.
                counters.invalid += 1
                heldInvalid.append((kind, token, sentAtMillis))
            }
            prune = true
        case .outcome(.failEvent(let reason, let status), _):
            counters.failed += 1
            tally.failed += 1
            counters.answers += 1
            stopReason = "APNs refused the push: \(reason) (\(status))"
        case .outcome(.failConfig(let reason, let status), _):
            counters.failed += 1
            tally.failed += 1
            counters.answers += 1
            stopReason = "APNs refused the configuration: \(reason) (\(status)); check the key, team, bundle id and environment"
        case .outcome, .exhausted:
            counters.failed += 1
            counters.answers += 1
            tally.failed += 1
        case .cancelled:
            tally.skipped += 1
        }
        advanceCheckpoint()
        return (stopReason, prune, orphaned)
    }
}

extension FanoutScheduler {

    /// Fails the event (a bad request or configuration): nothing more is sent.
    mutating func stop(_ id: RunID, reason: String, _ actions: inout [FanoutAction]) {
        guard var run = runs[id], !run.stopped else { return }
        run.stopped = true
        run.stopState = .failed
        run.stopReason = reason
        runs[id] = run
        actions.append(.cancel(id))
        logger.error("fanout.event_failed", ["event_id": .string(run.record.id), "reason": .string(reason)])
    }

    /// A prune was written: `removed` of `requested` deleted (the others were registered
    /// again after APNs' answer: kept, not reached), or it failed (`removed` nil).
    public mutating func pruned(_ request: PruneRequest, removed: Int?) -> [FanoutAction] {
        var actions: [FanoutAction] = []
        if let n = removed { metrics.pruned.inc(UInt64(n)) }
        guard let id = request.run, var run = runs[id] else { return [] }
        run.counters.pruned += Int64(removed ?? 0)
        run.counters.failed += Int64(request.items.count - (removed ?? 0))
        run.pendingPrunes -= 1
        runs[id] = run
        if run.finishing && run.pendingPrunes == 0 { completeFinish(id, &actions) }
        return actions
    }

    mutating func broadcastAnswered(_ id: RunID, _ result: APNSResult, _ actions: inout [FanoutAction]) {
        guard var run = runs[id] else { return }
        run.broadcastPending = false
        let state: BroadcastState
        var reason: String?
        switch result {
        case .outcome(.delivered(let rid, let unique), _):
            state = .sent
            metrics.broadcasts.inc()
            logger.info(
                "fanout.broadcast_sent",
                [
                    "event_id": .string(run.record.id), "apns_request_id": rid.map { .string($0) } ?? .null,
                    "apns_unique_id": unique.map { .string($0) } ?? .null,
                ])
        case .cancelled:
            state = .skipped
        case .outcome(.channelGone, _):
            state = .failed
            reason = "ChannelNotRegistered: the APNs channel no longer exists"
        case .outcome(let o, let resp):
            state = .failed
            reason = resp.flatMap { try? JSON.parse($0.body) }?["reason"]?.stringValue ?? o.label
        case .exhausted(let o):
            state = .failed
            reason = "retries exhausted (\(o.label))"
        }
        if state == .failed {
            metrics.broadcastFailures.inc()
            logger.error("fanout.broadcast_failed", ["event_id": .string(run.record.id), "reason": .string(reason ?? "")])
        }
        run.record.broadcastState = state
        if state == .failed && !run.usesTokens && run.stopState == nil {
            run.stopState = .failed
            run.stopReason = "broadcast failed: \(reason ?? "")"
        }
        runs[id] = run
        actions.append(.recordBroadcast(eventID: run.record.id, state: state, reason: reason))
        if run.orphaned {
            actions += releaseIfDone(id)
        } else {
            afterStep(id, &actions)
        }
    }

    /// The sender took the broadcast request, had no room (offered again next round), or
    /// there is no broadcast connection (`unavailable`: the part fails).
    public mutating func broadcastSubmitted(_ id: RunID, accepted: Bool, unavailable: Bool = false) -> [FanoutAction] {
        guard var run = runs[id] else { return [] }
        if unavailable {
            run.broadcastPending = false
            runs[id] = run
            var actions: [FanoutAction] = [
                .recordBroadcast(eventID: run.record.id, state: .failed, reason: "no broadcast connection configured")
            ]
            afterStep(id, &actions)
            return actions
        }
        if !accepted { pendingBroadcasts.append(id) }
        return []
    }

    // MARK: - storage outcomes

    /// The background count of a run's targets (nil: the count failed). Taken by a run
    /// sending (active or a helper) and by one draining after it was superseded, whose
    /// finish waits for it (`RunState.countPending`).
    public mutating func targetsCounted(_ id: RunID, _ n: Int64?) {
        guard var run = runs[id], let ch = channels[run.channelNum],
            ch.active == id || ch.helpers.contains(id) || ch.draining.contains(id)
        else { return }
        if let n { run.counters.targets = n }
        run.countPending = false
        runs[id] = run
    }

    /// A checkpoint write covering `batches` batches committed.
    public mutating func checkpointCommitted(_ id: RunID, batches: Int) {
        guard var run = runs[id] else { return }
        run.batchesCommitted = max(run.batchesCommitted, batches)
        if run.checkpointFailing {
            run.checkpointFailing = false
            logger.info("fanout.checkpoint_recovered", ["event_id": .string(run.record.id)])
        }
        runs[id] = run
    }

    /// A checkpoint (or `sending`) write failed: written again at the next interval;
    /// meanwhile sending is not held back by the duplicate window.
    public mutating func checkpointFailed(_ id: RunID, error: String) {
        guard var run = runs[id] else { return }
        run.checkpointDirty = true
        if !run.checkpointFailing {
            run.checkpointFailing = true
            logger.error("fanout.checkpoint_failed", ["event_id": .string(run.record.id), "error": .string(error)])
        }
        runs[id] = run
    }

    /// The database refused an event's final state: written again until it takes it.
    public mutating func finishFailed(_ record: FinishRecord, error: String) {
        logger.error("fanout.finish_failed", ["event_id": .string(record.eventID), "error": .string(error)])
        unrecordedFinishes.append(record)
    }

    /// A retried final state was written (`recorded`) or refused again.
    public mutating func finishRetried(_ record: FinishRecord, recorded: Bool) {
        guard recorded else { return }
        unrecordedFinishes.removeAll { $0 == record }
        logger.info("fanout.finish_recorded", ["event_id": .string(record.eventID), "state": .string(record.state.rawValue)])
    }
}
