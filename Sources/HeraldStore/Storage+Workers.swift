import HeraldCore

/// What several workers on one database need beyond `Leases` (contract, "Beyond one
/// machine"). Every method has a default for a single-process backend (SQLite: one lease of
/// every shard, for good, and no other worker to hear from), so only a shared backend
/// implements them.
public protocol SharedLeases: AnyObject, Sendable {
    /// As `acquireLease`, but claiming free shards only up to this worker's fair share of
    /// the channel (what the fan-out asks for when several workers share it).
    func claimShare(channelNum: Int64) throws -> Lease?

    /// Extends `lease` (the shards still this worker's: fewer, or nil, means some were lost
    /// to another worker) with its new `validFor`. Claims nothing new.
    func renewLease(_ lease: Lease) throws -> Lease?

    /// A channel's unfinished events with `afterSeq < seq <= throughSeq`, in `seq` order, each
    /// with its progress over `shards` only: `pending` is the part of `shards` the event is
    /// still to be sent to (events with none are left out), and the record's counters,
    /// targets and pass position are those of `pending`'s checkpoints. Shards whose
    /// checkpoints disagree (two earlier holders) are not merged: `pending` is the group of
    /// the least advanced, the rest come in a later call.
    func unfinishedEvents(channelNum: Int64, shards: ShardSet, afterSeq: Int64, throughSeq: Int64) throws -> [ShardedEvent]

    /// Live subscriptions of `kind` in `shards` of the channel (an event's targets there).
    func countSubscriptions(channelNum: Int64, kind: SubscriptionKind, shards: ShardSet) throws -> Int64

    /// Tells this worker it is alive (the others size their share of the shards by the live
    /// workers). Called by the fan-out's poll.
    func heartbeat() throws

    /// Starts telling `notice` what other workers tell (`FeedNotice`). Returns how to stop
    /// it, or nil when the backend has no such feed (one process: its own API tells the
    /// fan-out directly). `notice` runs on the feed's own thread.
    func watchEvents(_ notice: @escaping @Sendable (FeedNotice) -> Void) -> (@Sendable () -> Void)?

    /// Tells the other workers of late joiners registered here whose shards this worker does
    /// not hold: whichever holds them sends the catch-up. Best effort (a lost notice costs
    /// the joiner its catch-up; it gets the next event).
    func announceJoined(channelID: String, tokens: [[UInt8]])
}

/// What the feed of a shared backend tells a worker.
public enum FeedNotice: Sendable, Equatable {
    /// An event committed (by any worker, this one included).
    case event(id: String)
    /// Late joiners registered on another worker.
    case joined(channelID: String, tokens: [[UInt8]])
    /// Notices may have been missed (the feed's session was lost): poll now.
    case missed
}

/// An unfinished event and the shards of a lease it is still to be sent to.
public struct ShardedEvent: Sendable, Equatable {
    public var record: EventRecord
    public var pending: ShardSet

    public init(record: EventRecord, pending: ShardSet) {
        self.record = record
        self.pending = pending
    }
}

/// A fenced write found that this worker no longer holds (owner, attempt) of some shard it
/// was for: it wrote nothing, and the fan-out gives the channel up (the new holder resumes
/// from the last checkpoint).
public struct LeaseLost: Error, Sendable, Equatable {
    public let channelNum: Int64
    public init(channelNum: Int64) { self.channelNum = channelNum }
}

extension SharedLeases where Self: Leases {
    public func claimShare(channelNum: Int64) throws -> Lease? { try acquireLease(channelNum: channelNum) }
}

extension SharedLeases {
    public func renewLease(_ lease: Lease) throws -> Lease? { lease }
    public func heartbeat() throws {}
    public func watchEvents(_ notice: @escaping @Sendable (FeedNotice) -> Void) -> (@Sendable () -> Void)? { nil }
    public func announceJoined(channelID: String, tokens: [[UInt8]]) {}
}

extension SharedLeases where Self: EventLog {
    public func unfinishedEvents(channelNum: Int64, shards: ShardSet, afterSeq: Int64, throughSeq: Int64) throws -> [ShardedEvent] {
        try unfinishedEvents(channelNum: channelNum, afterSeq: afterSeq, throughSeq: throughSeq).map {
            ShardedEvent(record: $0, pending: shards)
        }
    }
}

extension SharedLeases where Self: Registry {
    public func countSubscriptions(channelNum: Int64, kind: SubscriptionKind, shards: ShardSet) throws -> Int64 {
        try countSubscriptions(channelNum: channelNum, kind: kind)
    }
}
