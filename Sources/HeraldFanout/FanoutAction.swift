import HeraldAPNS
import HeraldCore
import HeraldStore

/// One event being sent, as the scheduler names it (an event that is resumed after a
/// restart gets a new run).
public struct RunID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let value: Int
    public init(_ value: Int) { self.value = value }
    public static func < (a: RunID, b: RunID) -> Bool { a.value < b.value }
    public var description: String { "run\(value)" }
}

/// One request of the fan-out: what its answer is about. Requests carry it (as their sink
/// and index), never an `AnyObject` context.
public enum RequestID: Hashable, Sendable {
    /// Token `slot` of batch `batch` (its ordinal in the run) of `run`.
    case token(run: RunID, batch: Int, slot: Int)
    /// The broadcast request of `run`.
    case broadcast(run: RunID)
    /// Late-joiner catch-up `id` of channel `channel`.
    case catchUp(channel: Int64, id: Int)
}

/// What the engine does for the scheduler. Each action is executed on the engine thread, in
/// order, and its outcome (where it has one) is handed back through the method named in
/// its comment before the next action runs.
public enum FanoutAction: Sendable {
    /// Read the channel's unfinished events `afterSeq < seq <= throughSeq` →
    /// `eventsLoaded`.
    case loadEvents(channelNum: Int64, afterSeq: Int64, throughSeq: Int64)
    /// Record the event `sending` (queued write; a failure → `checkpointFailed`), make its
    /// token template, count its targets in the background (→ `targetsCounted`).
    case start(RunStart)
    /// Read the next tokens → `batchScanned` (or `scanFailed`).
    case scan(ScanRequest)
    /// Hand a batch's requests to the sender without blocking → `submitted`.
    case submit(BatchSubmit)
    /// Hand the broadcast request to the sender → `broadcastSubmitted`.
    case broadcast(BroadcastSubmit)
    /// Cancel the run's requests not sent yet (its answers come back `cancelled`).
    case cancel(RunID)
    /// Queue a checkpoint write → `checkpointCommitted` / `checkpointFailed`.
    case checkpoint(CheckpointWrite)
    /// Delete subscriptions APNs called dead (blocking write) → `pruned`.
    case prune(PruneRequest)
    /// Queue the event's final state → (on failure only) `finishFailed`.
    case finish(FinishRecord)
    /// Write final states the database refused before (blocking) → `finishRetried`.
    case retryFinishes([FinishRecord])
    /// Record the broadcast part's outcome (blocking write; a failure is logged).
    case recordBroadcast(eventID: String, state: BroadcastState, reason: String?)
    /// Read the channel's current event (and its record unless `known` has its id) →
    /// `currentStateRead`.
    case lookUpCurrent(channelNum: Int64, known: Set<String>)
    /// Hand late joiners' catch-ups to the sender in the express lane → `catchUpSubmitted`.
    case catchUp(CatchUpSubmit)
    /// The run is over: drop its template and sinks.
    case release(RunID)
    /// Give the channel's lease back.
    case releaseLease(Lease)
    /// Give some shards of a lease back, keeping the rest (and the channel's catch-ups).
    case releaseShards(Lease)
    /// Renew these shared leases, in one round trip → `leaseRenewed` for each (the time
    /// they were asked for with it).
    case renewLeases([Lease])
    /// Tell storage this worker is alive and read every unfinished event → `polled`.
    case poll
    /// Take the channel if any of its shards are free (as a notice of its event does).
    case acquire(channelNum: Int64)
    /// Renew and grow the channel's lease and read its unfinished events on it →
    /// `leaseRefreshed` (or `refreshFailed`).
    case refresh(channelNum: Int64)
    /// The channel's requests not yet written to APNs are dropped after `until` (the lease
    /// clock).
    case leaseDeadline(channelNum: Int64, until: Double)
    /// Sweep expired subscriptions and old events, refresh the subscription gauges (in the
    /// background).
    case sweep(retentionMillis: Int64)
    /// Tell the engine's observer (webhooks) the pruning guard stopped deletions; nothing
    /// comes back.
    case guardTripped(eventID: String, channelID: String, share: Double)
    /// Read the pruning guard's tally of the event on every shard but `shards` (blocking)
    /// → `pruneGuardRead` (nil on failure).
    case readPruneGuard(run: RunID, eventID: String, shards: ShardSet)
    /// Store that the guard tripped for the event, for the other workers (blocking) →
    /// `pruneGuardTripRecorded(trip, first:)` (a failure is logged and counts as first).
    case recordPruneGuardTrip(PruneGuardTrip)
}

/// A run that starts sending.
public struct RunStart: Sendable {
    public var run: RunID
    public var eventID: String
    public var channelNum: Int64
    public var shards: ShardSet
    public var kind: SubscriptionKind
    public var targets: Int64
    public var passStart: [UInt8]
    public var priority: Int
    public var usesTokens: Bool
    public var bundleID: String
    public var expiration: Int64?
    public var payload: [UInt8]
    /// The lease's local deadline (the lease clock; nil: none): the run's requests not yet
    /// written by then are dropped.
    public var deadline: Double?
}

/// The next tokens of a run's pass.
public struct ScanRequest: Sendable, Equatable {
    public var run: RunID
    public var channelNum: Int64
    public var kind: SubscriptionKind
    public var shards: ShardSet
    public var after: [UInt8]
    public var before: [UInt8]?
    public var limit: Int
}

/// One batch of token pushes.
public struct BatchSubmit: Sendable, Equatable {
    public var run: RunID
    public var environment: APNSEnvironment
    public var batch: Int
    public var tokens: TokenRows
    /// The whole audience in one batch: the sender's express lane.
    public var express: Bool
    /// The channel's app: it picks the Apple team whose connections carry the batch.
    public var bundleID: String = ""
}

/// The broadcast request of a run.
public struct BroadcastSubmit: Sendable, Equatable {
    public var run: RunID
    public var environment: APNSEnvironment
    public var bundleID: String
    public var apnsChannelID: String?
    public var priority: Int
    public var expiration: Int64
    public var payload: [UInt8]
}

/// A checkpoint: everything of `shards` up to `cursor` (pass order) is finished.
public struct CheckpointWrite: Sendable, Equatable {
    public var run: RunID
    public var eventID: String
    public var shards: ShardSet
    public var cursor: [UInt8]
    public var wrapped: Bool
    public var counters: EventCounters
    /// Batches this checkpoint covers (the duplicate window counts from the committed one).
    public var batches: Int
}

/// Subscriptions to delete (a registration at or after `beforeMillis` survives).
public struct PruneRequest: Sendable {
    /// The run whose counters take the result (nil: a catch-up's).
    public var run: RunID?
    public var channelNum: Int64
    public var items: [(kind: SubscriptionKind, token: [UInt8], beforeMillis: Int64)]
    /// Why APNs called them dead (the webhooks' `subscription.pruned` reason).
    public var reason: PruneReason = .unregistered
}

/// Why subscriptions are pruned: 410 with APNs' timestamp, or a token refused as invalid
/// (`BadDeviceToken`, a 410 without a timestamp).
public enum PruneReason: String, Sendable, Equatable {
    case unregistered
    case badDeviceToken = "bad_device_token"
}

/// An event's final state.
public struct FinishRecord: Sendable, Equatable {
    public var eventID: String
    public var shards: ShardSet
    public var state: EventState
    public var counters: EventCounters
    public var reason: String?
    public var supersededBy: String?
}

/// Where a catch-up's payload comes from.
public enum CatchUpSource: Sendable, Equatable {
    /// The run sending the current event now (its template).
    case run(RunID)
    /// The stored current event.
    case event(EventRecord)

    public var eventID: String? {
        if case .event(let e) = self { return e.id }
        return nil
    }
}

/// Late joiners of one channel, sent in one submission.
public struct CatchUpSubmit: Sendable, Equatable {
    public var channelNum: Int64
    public var environment: APNSEnvironment
    public var bundleID: String
    public var source: CatchUpSource
    public var items: [CatchUpItem]
    /// The lease's local deadline (nil: none), as `RunStart.deadline`.
    public var deadline: Double? = nil
}

public struct CatchUpItem: Sendable, Equatable {
    public var id: Int
    public var token: [UInt8]
}
