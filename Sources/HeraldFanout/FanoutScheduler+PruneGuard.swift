import HeraldCore
import HeraldStore

/// The pruning guard (design, delivery 10; `PruneGuard` decides): 410 answers are pruned
/// in batches; `BadDeviceToken` answers are held until the guard has seen enough answers,
/// and dropped, not deleted, once an implausible share of the event's answers call tokens
/// invalid. On one worker the run's answers are the event's. Under a shared lease the run
/// reads the other shards' stored tally (`readPruneGuard`) before each batch of deletions
/// and decides on the sum; a trip is stored for the event (`recordPruneGuardTrip`) and ends
/// the deletions of every other worker at its next decision.
extension FanoutScheduler {
    /// Deletions go in batches of this many tokens.
    static let pruneBatch = 256

    mutating func flushPrunes(_ id: RunID, final: Bool, _ actions: inout [FanoutAction]) {
        guard var run = runs[id], let ch = channels[run.channelNum] else { return }
        if run.unregistered.count >= Self.pruneBatch || (final && !run.unregistered.isEmpty) {
            actions.append(.prune(PruneRequest(run: id, channelNum: run.channelNum, items: run.unregistered)))
            run.pendingPrunes += 1
            run.unregistered.removeAll()
        }
        defer { runs[id] = run }
        guard !run.heldInvalid.isEmpty else { return }
        if run.guardTripped {
            dropHeldInvalid(&run)
            return
        }
        if ch.lease.validFor != nil {
            // Shared: the decision needs the other shards' tally, read before each batch.
            guard !run.guardReading, run.heldInvalid.count >= run.nextGuardCheck || final else { return }
            run.guardReading = true
            run.pendingPrunes += 1
            actions.append(.readPruneGuard(run: id, eventID: run.record.id, shards: run.shards))
            return
        }
        let verdict = PruneGuard.decide(
            answers: run.counters.answers, invalid: run.counters.invalid, others: nil, final: final,
            minSample: config.pruneGuardMinSample, ratio: config.pruneGuardRatio)
        apply(verdict, to: &run, ch, final: final, &actions)
    }

    /// The other shards' tally of a run's event (nil: the read failed; the tokens stay held
    /// and it is read again after another batch, or they are kept at the end).
    public mutating func pruneGuardRead(_ id: RunID, _ tally: PruneGuardTally?) -> [FanoutAction] {
        guard var run = runs[id] else { return [] }
        var actions: [FanoutAction] = []
        run.guardReading = false
        run.pendingPrunes -= 1
        if let ch = channels[run.channelNum], !run.orphaned, !run.heldInvalid.isEmpty {
            if let tally {
                let verdict = PruneGuard.decide(
                    answers: run.counters.answers, invalid: run.counters.invalid, others: tally, final: run.finishing,
                    minSample: config.pruneGuardMinSample, ratio: config.pruneGuardRatio)
                apply(verdict, to: &run, ch, final: run.finishing, &actions)
            } else if run.finishing {
                // Unknown at the end: kept (counted failed), the side that deletes nothing.
                dropHeldInvalid(&run)
            }
            run.nextGuardCheck = run.heldInvalid.count + Self.pruneBatch
        }
        runs[id] = run
        if run.finishing && run.pendingPrunes == 0 { completeFinish(id, &actions) }
        return actions
    }

    mutating func apply(
        _ verdict: PruneGuard.Verdict, to run: inout RunState, _ ch: ChannelState, final: Bool, _ actions: inout [FanoutAction]
    ) {
        switch verdict {
        case .hold:
            return
        case .trippedElsewhere:
            run.guardTripped = true
            logger.warning(
                "fanout.prune_guard_tripped_elsewhere",
                ["event_id": .string(run.record.id), "channel": .string(ch.channel.id), "kept": .int(Int64(run.heldInvalid.count))])
            dropHeldInvalid(&run)
        case .trip(let share):
            run.guardTripped = true
            metrics.guardTrips.inc()
            logger.error(
                "fanout.prune_guard_tripped",
                [
                    "event_id": .string(run.record.id), "channel": .string(ch.channel.id), "bundle_id": .string(ch.channel.bundleID),
                    "environment": .string(ch.channel.environment.rawValue), "invalid": .int(run.counters.invalid),
                    "answers": .int(run.counters.answers), "share": .double(share),
                    "hint": "most tokens were refused as invalid: check the channel's environment and bundle id; subscriptions kept",
                ])
            if ch.lease.validFor != nil { actions.append(.recordPruneGuardTrip(eventID: run.record.id)) }
            actions.append(.guardTripped(eventID: run.record.id, channelID: ch.channel.id, share: share))
            dropHeldInvalid(&run)
        case .prune:
            guard run.heldInvalid.count >= Self.pruneBatch || final || ch.lease.validFor != nil else { return }
            actions.append(.prune(PruneRequest(run: run.id, channelNum: run.channelNum, items: run.heldInvalid, reason: .badDeviceToken)))
            run.pendingPrunes += 1
            run.heldInvalid.removeAll()
        }
    }

    /// The held invalid tokens are not deleted: they count as failed.
    func dropHeldInvalid(_ run: inout RunState) {
        run.counters.failed += Int64(run.heldInvalid.count)
        run.heldInvalid.removeAll()
    }
}
