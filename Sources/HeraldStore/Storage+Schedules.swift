import HeraldAPNS
import HeraldCore

/// What a scheduled event became when it was released.
public enum ScheduleRelease: Sendable, Equatable {
    /// Queued with its new `seq`: tell the fan-out (`record` and `channel` as written).
    case sent(EventRecord, Channel)
    /// Failed or superseded (`PublishRule.release`), as stored now.
    case refused(EventRecord)
    /// Not (or no longer) scheduled: cancelled, released by another worker, or deleted.
    case notScheduled
}

/// A change of a channel's settings (`PATCH /v1/channels/{id}`): nil leaves a field as it
/// is; `expiresAt` `.some(nil)` removes the expiry.
public struct ChannelChange: Sendable, Equatable {
    public var catchUp: Bool?
    public var minIntervalMillis: Int64?
    public var priority10BudgetPerHour: Int64?
    public var expiresAt: Int64??

    public init(catchUp: Bool? = nil, minIntervalMillis: Int64? = nil, priority10BudgetPerHour: Int64? = nil, expiresAt: Int64?? = nil) {
        self.catchUp = catchUp
        self.minIntervalMillis = minIntervalMillis
        self.priority10BudgetPerHour = priority10BudgetPerHour
        self.expiresAt = expiresAt
    }
}

/// The database's duty lock: whoever holds it runs `DutyPlan`'s work. On SQLite the one
/// process always holds it; on PostgreSQL it is a session advisory lock on a connection of
/// its own (docs/postgres.md, "Work that runs once").
public protocol DutyLock: AnyObject, Sendable {
    /// Takes the lock, or checks that it is still held. False: another worker holds it (or
    /// the database is unreachable; a lost session has lost the lock). Blocks for a round
    /// trip; one thread at a time.
    func hold() -> Bool
    /// Gives it back (shutdown).
    func release()
}

/// Scheduled publishes, the event listing, channel settings and expiry (issue 15). Every
/// method may block for a database round trip; failures are `StoreError`s.
public protocol Schedules: AnyObject, Sendable {
    /// A publish with `send_at` (`PublishRule.schedule`): stored at once as `scheduled`
    /// with a provisional `seq`. `body` is the publish body as validated (without
    /// `send_at`), kept to render the event when it is released. With `dryRun`, does every
    /// check and stores nothing.
    func schedule(
        channelID: String, event: LiveActivityEvent, body: [UInt8], sendAt: Int64, idempotencyKey: String?, dryRun: Bool
    ) throws -> PublishResult
    /// Releases a scheduled event (`PublishRule.release` against the channel as it is now).
    func release(eventID: String) throws -> ScheduleRelease
    /// Ids of scheduled events with `send_at` ≤ `atOrBefore`, in `send_at` order.
    func dueScheduled(atOrBefore: Int64, limit: Int) throws -> [String]
    /// The earliest `send_at` of a scheduled event (nil: none).
    func nextScheduledAt() throws -> Int64?
    /// Cancels the scheduled event `eventID` of `channelID`. Throws `eventNotFound`,
    /// `notScheduled` (it is sending or finished).
    func cancel(channelID: String, eventID: String) throws -> EventRecord
    /// Fails every scheduled event of a channel with `reason` (the channel closed).
    func failScheduled(channelNum: Int64, reason: String) throws -> Int
    /// A channel's events, newest first (highest `seq`), with `seq < beforeSeq` when given,
    /// of `state` when given.
    func events(channelID: String, state: EventState?, beforeSeq: Int64?, limit: Int) throws -> [EventRecord]
    /// Applies `change` to the open or closed channel `id`. Throws `channelNotFound`.
    func updateChannel(id: String, _ change: ChannelChange) throws -> Channel
    /// Open channels with `expires_at` ≤ `atOrBefore`, earliest first.
    func expiringChannels(atOrBefore: Int64, limit: Int) throws -> [Channel]
    /// The earliest `expires_at` of an open channel (nil: none).
    func nextChannelExpiry() throws -> Int64?
    /// The duty lock of this database (one per runner).
    func makeDutyLock() throws -> DutyLock
}
