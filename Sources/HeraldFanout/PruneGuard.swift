import HeraldStore

/// The pruning guard's decision (design, delivery 10), as a pure function: whether the
/// `BadDeviceToken` subscriptions an event's run holds may be deleted.
///
/// On one worker (`others` nil) the run's own answers are the event's: once
/// `minSample` answers came back (or the pass is over), `ratio` of them or more calling
/// tokens invalid trips the guard. With several workers the run counts its own answers
/// live and adds the other shards' stored tally (`PruneGuardTally`): the decision is per
/// event across all its shards, as on one machine. A trip stored by another worker ends
/// it at once; and until every shard of the channel has started, the sample is not
/// ready (a worker far ahead of the others would otherwise judge the event by its shards
/// alone) unless the run's pass is over.
public enum PruneGuard {
    public enum Verdict: Equatable, Sendable {
        /// Not enough answers yet: keep holding the tokens.
        case hold
        /// The share is plausible: the held tokens may be deleted.
        case prune
        /// An implausible share: stop deleting (`share` of the answers were invalid).
        case trip(share: Double)
        /// Another worker tripped the guard for this event: stop deleting.
        case trippedElsewhere
    }

    public static func decide(
        answers: Int64, invalid: Int64, others: PruneGuardTally?, final: Bool, minSample: Int, ratio: Double
    ) -> Verdict {
        if others?.tripped == true { return .trippedElsewhere }
        let total = answers + (others?.answers ?? 0)
        let bad = invalid + (others?.invalid ?? 0)
        let everyShardStarted = others.map { $0.startedShards >= $0.shardCount } ?? true
        guard final || (everyShardStarted && total >= Int64(minSample)) else { return .hold }
        guard Double(bad) >= ratio * Double(total) else { return .prune }
        return .trip(share: total > 0 ? Double(bad) / Double(total) : 1)
    }
}
