import HeraldAPNS
import HeraldCore

/// The storage Herald runs on, in four parts: the registry (channels, subscriptions), the
/// event log, API keys, and leases. The API, the CLI and the fan-out use these protocols;
/// `Store` (SQLite) implements them, and a second backend implements them with no change
/// above. Every method may block (a database round trip): call them from API workers, the
/// SQLite writer's completions or the fan-out's executor thread, never from an event loop.
/// Failures are `StoreError`s (what the API renders) unless stated otherwise.
public protocol Registry: AnyObject, Sendable {
    var clock: WallClock { get }

    func createChannel(
        id: String, bundleID: String, mode: ChannelMode, environment: APNSEnvironment, storagePolicy: StoragePolicy,
        apnsChannelID: String?, settings: ChannelSettings
    ) throws -> Channel
    func channel(id: String) throws -> Channel?
    func channel(num: Int64) throws -> Channel?
    func channels() throws -> [Channel]
    func closeChannel(id: String) throws -> (Channel, [String])
    func setAPNSChannelID(channelNum: Int64, _ apnsID: String?) throws
    func subscriberCounts(channelNum: Int64) throws -> (activity: Int64, pushToStart: Int64)

    func register(
        channelID: String, token: [UInt8], kind: SubscriptionKind, replaces: [UInt8]?, expiresAt: Int64?
    ) throws -> (Subscription, created: Bool, channel: Channel)
    func unregister(channelID: String, token: [UInt8]) throws
    func batch(channelID: String, subscribe: [SubscriptionInput], unsubscribe: [[UInt8]]) throws -> BatchResult
    func prune(channelNum: Int64, _ items: [(kind: SubscriptionKind, token: [UInt8], beforeMillis: Int64)]) throws -> Int
    func sweepExpiredSubscriptions(limit: Int) throws -> Int
    func subscriptionTotals() throws -> (activity: Int64, pushToStart: Int64)
    func countSubscriptions(channelNum: Int64, kind: SubscriptionKind) throws -> Int64
    /// A reader of subscriptions in token order for one thread (the fan-out's executor).
    func makeScanner() throws -> SubscriptionScan
}

/// Streams a channel's subscriptions of the shards of a lease, in token order, in batches.
/// Not thread-safe: one per thread.
public protocol SubscriptionScan: AnyObject {
    /// Up to `limit` live tokens of `kind` of `shards` after `after` (exclusive; empty =
    /// from the start) and, when given, up to `before` (inclusive). Fewer than `limit`: the
    /// range is exhausted.
    func next(
        channelNum: Int64, kind: SubscriptionKind, shards: ShardSet, after: [UInt8], before: [UInt8]?, now: Int64, limit: Int
    ) throws -> TokenRows
}

/// Events: the publish commit (rules in `PublishRule`), progress and final states. The
/// queued writes (`completion` variants) return at once and are applied in the order they
/// were queued; `completion` runs on a storage thread with nil once committed, or the
/// error. `shards` names the lease a progress write is for (on SQLite always every shard).
public protocol EventLog: AnyObject, Sendable {
    func publish(channelID: String, event: LiveActivityEvent, idempotencyKey: String?, dryRun: Bool) throws -> PublishResult
    func event(channelID: String, eventID: String) throws -> EventRecord
    func event(id: String) throws -> EventRecord?
    func lastEvent(channelNum: Int64) throws -> EventRecord?
    /// Queued and sending events, by channel then `seq` (what the fan-out resumes).
    func unfinishedEvents() throws -> [EventRecord]
    /// A channel's unfinished events with `afterSeq < seq <= throughSeq`, in `seq` order.
    func unfinishedEvents(channelNum: Int64, afterSeq: Int64, throughSeq: Int64) throws -> [EventRecord]
    /// The highest `seq` of a channel's finished events below its lowest unfinished one (0:
    /// none): every event at or below it is finished (a cancelled scheduled event keeps its
    /// provisional `seq`, which may be above an event still sending).
    func lastFinishedSeq(channelNum: Int64) throws -> Int64

    func markSending(
        eventID: String, shards: ShardSet, targets: Int64, passStart: [UInt8], priority: Int,
        completion: @escaping @Sendable (Error?) -> Void)
    /// Everything of `shards` up to `cursor` (in pass order) is finished.
    func checkpoint(
        eventID: String, shards: ShardSet, cursor: [UInt8], wrapped: Bool, counters: EventCounters,
        completion: @escaping @Sendable (Error?) -> Void)
    func finishEvent(
        eventID: String, shards: ShardSet, state: EventState, counters: EventCounters, reason: String?, supersededBy: String?,
        completion: @escaping @Sendable (Error?) -> Void)
    /// As the queued `finishEvent`, waiting for the commit (a retry of one the database
    /// refused).
    func finishEvent(
        eventID: String, shards: ShardSet, state: EventState, counters: EventCounters, reason: String?, supersededBy: String?
    ) throws
    func setBroadcastState(eventID: String, state: BroadcastState, reason: String?) throws
    /// Deletes finished events older than `olderThanMillis` (never a channel's current one).
    func sweepEvents(olderThanMillis: Int64) throws -> Int
}

/// API keys (only a hash of each secret is stored).
public protocol AccessKeys: AnyObject, Sendable {
    func createKey(role: KeyRole, channels: [String], label: String?) throws -> (APIKey, secret: String)
    func keys() throws -> [APIKey]
    func revokeKey(id: String) throws -> APIKey
    func authenticate(secret: String) throws -> APIKey?
    /// Non-blocking: at most once a minute per key.
    func touchKey(_ key: APIKey)
}

/// Who sends which shards. A worker asks for the lease of a channel before sending its
/// events, and gives it back when it stops.
public protocol Leases: AnyObject, Sendable {
    /// The shards of `channelNum` this worker may send now (nil: none free).
    func acquireLease(channelNum: Int64) throws -> Lease?
    /// Gives `lease` back (shutdown, channel closed).
    func releaseLease(_ lease: Lease)
}

/// Everything the fan-out needs.
public typealias FanoutStorage = Registry & EventLog & Leases & SharedLeases & PruneGuardStorage & LeaseRenewals

/// Everything the API needs.
public protocol HeraldStorage:
    Registry, EventLog, AccessKeys, Leases, SharedLeases, Schedules, APNSChannelLosses, WebhookStorage, WebhookReporting,
    PruneGuardStorage, LeaseRenewals
{
    /// The storage answers and its schema is current (`/readyz`).
    func isReady() -> Bool
}
