import HeraldCore
import HeraldStore

/// The pruning guard (design, delivery 10; `PruneGuard` decides): 410 answers are pruned
/// in batches; `BadDeviceToken` answers are held until the guard has seen enough answers,
/// and dropped, not deleted, once an implausible share of the event's answers call tokens
/// invalid. On one worker the run's answers are the event's. Under a shared lease the run
/// reads the other shards' stored tally (`readPruneGuard`) before each batch of deletions
/// and decides on the sum; a trip is stored for the event (`recordPruneGuardTrip`) and ends
/// the deletions of every other worker at its next decision. It is reported (the trips
/// counter, the `fanout.prune_guard_tripped` log, the webhook) by the worker whose write
/// stored it: two that trip at once report it once.
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
            let trip = PruneGuardTrip(
                eventID: run.record.id, channel: ch.channel, invalid: run.counters.invalid, answers: run.counters.answers, share: share,
                kept: run.heldInvalid.count)
            // Shared: reported once stored, by the worker that stored it first.
            if ch.lease.validFor != nil {
                actions.append(.recordPruneGuardTrip(trip))
            } else {
                actions += report(trip)
            }
            dropHeldInvalid(&run)
        case .prune:
            guard run.heldInvalid.count >= Self.pruneBatch || final || ch.lease.validFor != nil else { return }
            actions.append(.prune(PruneRequest(run: run.id, channelNum: run.channelNum, items: run.heldInvalid, reason: .badDeviceToken)))
            run.pendingPrunes += 1
            run.heldInvalid.removeAll()
        }
    }

    /// The engine stored `trip` (`first`: this worker's write set it; false: another
    /// worker's trip of the same event was stored first, and reports it).
    public mutating func pruneGuardTripRecorded(_ trip: PruneGuardTrip, first: Bool) -> [FanoutAction] {
        guard first else {
            logger.warning(
                "fanout.prune_guard_tripped_elsewhere",
                ["event_id": .string(trip.eventID), "channel": .string(trip.channel.id), "kept": .int(Int64(trip.kept))])
            return []
        }
        return report(trip)
    }

    /// Counts, logs and tells the observer (webhooks) of a trip: once per event.
    func report(_ trip: PruneGuardTrip) -> [FanoutAction] {
        metrics.guardTrips.inc()
        logger.error(
            "fanout.prune_guard_tripped",
            [
                "event_id": .string(trip.eventID), "channel": .string(trip.channel.id), "bundle_id": .string(trip.channel.bundleID),
                "environment": .string(trip.channel.environment.rawValue), "invalid": .int(trip.invalid),
                "answers": .int(trip.answers), "share": .double(trip.share),
                "hint": "most tokens were refused as invalid: check the channel's environment and bundle id; subscriptions kept",
            ])
        return [.guardTripped(eventID: trip.eventID, channelID: trip.channel.id, share: trip.share)]
    }

    /// The held invalid tokens are not deleted: they count as failed.
    func dropHeldInvalid(_ run: inout RunState) {
        run.counters.failed += Int64(run.heldInvalid.count)
        run.heldInvalid.removeAll()
    }
}

/// A trip of the pruning guard, as decided: what its report says.
public struct PruneGuardTrip: Sendable {
    public var eventID: String
    public var channel: Channel
    /// The run's own answers so far, and those that called the token invalid.
    public var invalid: Int64
    public var answers: Int64
    /// The invalid share the decision saw (every worker's counts).
    public var share: Double
    /// Invalid tokens the run held and keeps (counted failed).
    public var kept: Int
}
