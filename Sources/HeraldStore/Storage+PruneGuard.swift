import HeraldCore

/// What the pruning guard (design, delivery 10) needs from a backend several workers share:
/// the tally the other workers stored for an event, and a trip that stops them all. Every
/// method has a default for a single-process backend (SQLite: one worker, whose own pass
/// is the whole event), so only a shared backend implements them.
public protocol PruneGuardStorage: AnyObject, Sendable {
    /// The guard's tally of event `eventID` on every shard but `shards` (the caller's own,
    /// which it counts live), as the other holders' last fenced checkpoints and final
    /// states stored it, and whether any worker tripped the guard for the event. Nil: the
    /// backend is not shared (nothing but the caller's own counts exists). Blocking read.
    func pruneGuardTally(eventID: String, excluding shards: ShardSet) throws -> PruneGuardTally?

    /// Records that the guard tripped for `eventID`, so the other workers stop deleting at
    /// their next decision. True when this call stored it; false when some worker had
    /// already (two that trip at once: one reports the trip, the other sees it stored).
    /// Blocking write; not fenced (a trip only ever stops deletions).
    func recordPruneGuardTrip(eventID: String) throws -> Bool
}

/// The other shards' part of an event's pruning-guard tally.
public struct PruneGuardTally: Sendable, Equatable {
    /// Answers and `BadDeviceToken` answers stored by the other holders.
    public var answers: Int64
    public var invalid: Int64
    /// Some worker tripped the guard for this event.
    public var tripped: Bool
    /// Shards of the channel whose holder has started the event (a progress row exists),
    /// of `shardCount`: until every one has, the others' part of the sample is incomplete.
    public var startedShards: Int
    public var shardCount: Int

    public init(answers: Int64 = 0, invalid: Int64 = 0, tripped: Bool = false, startedShards: Int, shardCount: Int) {
        self.answers = answers
        self.invalid = invalid
        self.tripped = tripped
        self.startedShards = startedShards
        self.shardCount = shardCount
    }
}

extension PruneGuardStorage {
    public func pruneGuardTally(eventID: String, excluding shards: ShardSet) throws -> PruneGuardTally? { nil }
    public func recordPruneGuardTrip(eventID: String) throws -> Bool { true }
}
