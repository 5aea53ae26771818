/// A webhook (design, "Webhooks"): where deliveries go, which event types and channels it
/// wants, and its signing secret sealed (`sealedSecret`; the API opens it to sign, see
/// docs/operations.md, "Webhook secrets at rest").
public struct Webhook: Sendable, Equatable {
    public let id: String
    public let url: String
    /// Event types (`event.finished`, ...), as created.
    public let events: [String]
    /// Channel ids or `prefix*` patterns; empty: every channel.
    public let channels: [String]
    public let createdAtMillis: Int64
    public let sealedSecret: [UInt8]

    public init(id: String, url: String, events: [String], channels: [String], createdAtMillis: Int64, sealedSecret: [UInt8]) {
        self.id = id
        self.url = url
        self.events = events
        self.channels = channels
        self.createdAtMillis = createdAtMillis
        self.sealedSecret = sealedSecret
    }

    /// True when this webhook wants events of type `type` on `channel`.
    public func wants(type: String, channel: String) -> Bool {
        guard events.contains(type) else { return false }
        if channels.isEmpty { return true }
        return channels.contains { p in
            if p == "*" { return true }
            if p.hasSuffix("*") { return channel.hasPrefix(p.dropLast()) }
            return p == channel
        }
    }
}

/// A delivery as the outbox table keeps it. `id` increases in commit order (on PostgreSQL
/// the inserts are serialized for that), so it is the order per webhook.
public struct StoredWebhookDelivery: Sendable, Equatable {
    public let id: Int64
    public let webhookID: String
    /// The event type (`event.finished`, ...).
    public let type: String
    /// The event's fields as JSON text (without `type`, `id`, `created_at`).
    public let payload: String
    public let createdAtMillis: Int64
    public let attempts: Int
    public let notBeforeMillis: Int64

    public init(
        id: Int64, webhookID: String, type: String, payload: String, createdAtMillis: Int64, attempts: Int, notBeforeMillis: Int64
    ) {
        self.id = id
        self.webhookID = webhookID
        self.type = type
        self.payload = payload
        self.createdAtMillis = createdAtMillis
        self.attempts = attempts
        self.notBeforeMillis = notBeforeMillis
    }
}

/// A delivery to add to the outbox.
public struct NewWebhookDelivery: Sendable, Equatable {
    public let webhookID: String
    public let type: String
    public let payload: String
    public let createdAtMillis: Int64

    public init(webhookID: String, type: String, payload: String, createdAtMillis: Int64) {
        self.webhookID = webhookID
        self.type = type
        self.payload = payload
        self.createdAtMillis = createdAtMillis
    }
}

/// Webhooks and their durable outbox (design, "Webhooks"). Every method may block (a
/// database round trip): call from API workers or the webhook dispatcher's thread.
/// Failures are `StoreError`s.
public protocol WebhookStorage: AnyObject, Sendable {
    func createWebhook(url: String, events: [String], channels: [String], sealedSecret: [UInt8]) throws -> Webhook
    /// Every webhook, oldest first.
    func webhooks() throws -> [Webhook]
    /// Deletes a webhook and its waiting deliveries; nil when there is none with `id`.
    func deleteWebhook(id: String) throws -> Webhook?
    /// Appends `rows` in one transaction, in order; returns their ids. Rows of a webhook
    /// deleted meanwhile are skipped (id 0).
    func appendWebhookDeliveries(_ rows: [NewWebhookDelivery]) throws -> [Int64]
    /// Up to `limit` waiting deliveries with `id > afterID`, by id.
    func webhookDeliveries(afterID: Int64, limit: Int) throws -> [StoredWebhookDelivery]
    /// A failed try: `attempts` so far, not again before `notBeforeMillis`.
    func rescheduleWebhookDelivery(id: Int64, attempts: Int, notBeforeMillis: Int64) throws
    /// Removes deliveries (delivered, or dropped).
    func removeWebhookDeliveries(ids: [Int64]) throws
    /// Deliveries waiting, and the oldest one's creation time.
    func webhookOutboxStats() throws -> (count: Int, oldestCreatedAtMillis: Int64?)
    /// Takes or renews the right to dispatch deliveries for `millis` (one dispatcher over
    /// all webhooks at a time, on PostgreSQL by the database's clock). True: `holder` has it.
    func claimWebhookDispatch(holder: String, millis: Int64) throws -> Bool
    /// Gives the right back (shutdown).
    func releaseWebhookDispatch(holder: String) throws
}

/// A fact a webhook may report, recorded with the fact itself (`webhook_reports`).
public struct WebhookReport: Sendable, Equatable {
    public let id: Int64
    /// The event type (`event.finished`, ...).
    public let type: String
    public let channel: String
    /// `event.finished`: `{"event_id"}`; `subscription.pruned`: `{"tokens":[hex],"reason"}`;
    /// others: the event's fields.
    public let payload: String
    public let createdAtMillis: Int64

    public init(id: Int64, type: String, channel: String, payload: String, createdAtMillis: Int64) {
        self.id = id
        self.type = type
        self.channel = channel
        self.payload = payload
        self.createdAtMillis = createdAtMillis
    }
}

/// Facts recorded in the transaction that makes them, so a crash loses no webhook report
/// (design, "Webhooks"). Each records only while some webhook wants that event type.
public protocol WebhookReporting: AnyObject, Sendable {
    /// `Registry.prune`, recording the tokens it deleted as a `subscription.pruned` report
    /// with `reason` in the same transaction. Returns how many it deleted.
    func pruneReporting(channelNum: Int64, _ items: [(kind: SubscriptionKind, token: [UInt8], beforeMillis: Int64)], reason: String)
        throws -> Int
    /// The queued `EventLog.finishEvent`, recording an `event.finished` report in the same
    /// transaction.
    func finishEventReporting(
        eventID: String, shards: ShardSet, state: EventState, counters: EventCounters, reason: String?, supersededBy: String?,
        completion: @escaping @Sendable (Error?) -> Void)
    /// `Registry.closeChannel`, recording `channel.closed` with `why` and an
    /// `event.finished` for each event the close stopped, in the same transaction (only when
    /// this call closed it).
    func closeChannelReporting(id: String, why: String) throws -> (Channel, [String])
    /// Records a report in a transaction of its own (a guard trip).
    func recordWebhookReport(type: String, channel: String, payload: String) throws
    /// Reports waiting to be turned into deliveries.
    func webhookReportCount() throws -> Int
    /// In one transaction: reads up to `limit` reports by id, inserts the deliveries
    /// `convert` makes of them, deletes the reports. Returns how many reports it took.
    func convertWebhookReports(limit: Int, _ convert: @escaping @Sendable ([WebhookReport]) -> [NewWebhookDelivery]) throws -> Int
}
