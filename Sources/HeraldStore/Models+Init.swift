import HeraldAPNS

// Public initializers of the stored models, for a storage backend in another module (the
// PostgreSQL one reads rows into these). A struct's memberwise initializer is internal
// even when every property is public; these forward to it, so every backend builds the
// same values.

extension Channel {
    public init(
        num: Int64, id: String, bundleID: String, mode: ChannelMode, environment: APNSEnvironment, storagePolicy: StoragePolicy,
        apnsChannelID: String?, isOpen: Bool, lifecycle: ChannelLifecycle, lastSeq: Int64, lastTimestamp: Int64,
        currentEvent: String?, settings: ChannelSettings, createdAtMillis: Int64, closedAtMillis: Int64?
    ) {
        self.init(
            num: num, id: id, bundleID: bundleID, mode: mode, environment: environment, storagePolicy: storagePolicy,
            apnsChannelID: apnsChannelID, isOpen: isOpen, lifecycle: lifecycle, lastSeq: lastSeq, lastTimestamp: lastTimestamp,
            currentEvent: currentEvent, catchUp: settings.catchUp, minIntervalMillis: settings.minIntervalMillis,
            priority10BudgetPerHour: settings.priority10BudgetPerHour, createdAtMillis: createdAtMillis,
            closedAtMillis: closedAtMillis)
    }
}

extension Subscription {
    public static func stored(
        channelID: String, token: [UInt8], kind: SubscriptionKind, registeredAtMillis: Int64, expiresAt: Int64?
    ) -> Subscription {
        Subscription(channelID: channelID, token: token, kind: kind, registeredAtMillis: registeredAtMillis, expiresAt: expiresAt)
    }
}

extension APIKey {
    /// `secretHash`: the SHA-256 of the secret, as stored.
    public init(
        id: String, role: KeyRole, channels: [String], label: String?, createdAtMillis: Int64, revokedAtMillis: Int64?,
        lastUsedAtMillis: Int64?, storedSecretHash: [UInt8]
    ) {
        self.init(
            id: id, role: role, channels: channels, label: label, createdAtMillis: createdAtMillis,
            revokedAtMillis: revokedAtMillis, lastUsedAtMillis: lastUsedAtMillis, secretHash: storedSecretHash)
    }
}

extension EventRecord {
    public static func stored(
        id: String, channelNum: Int64, channelID: String, seq: Int64, kind: LiveActivityEventKind, apsTimestamp: Int64,
        payload: [UInt8], priority: Int, expiration: Int64?, state: EventState, failureReason: String?, supersededBy: String?,
        createdAtMillis: Int64, startedAtMillis: Int64?, finishedAtMillis: Int64?, counters: EventCounters,
        passStart: [UInt8]?, cursor: [UInt8]?, wrapped: Bool, broadcastState: BroadcastState, broadcastReason: String?
    ) -> EventRecord {
        EventRecord(
            id: id, channelNum: channelNum, channelID: channelID, seq: seq, kind: kind, apsTimestamp: apsTimestamp,
            payload: payload, priority: priority, expiration: expiration, state: state, failureReason: failureReason,
            supersededBy: supersededBy, createdAtMillis: createdAtMillis, startedAtMillis: startedAtMillis,
            finishedAtMillis: finishedAtMillis, counters: counters, passStart: passStart, cursor: cursor, wrapped: wrapped,
            broadcastState: broadcastState, broadcastReason: broadcastReason)
    }
}

extension SubscriptionKind {
    /// The kind's number at rest (0 activity, 1 push-to-start), the same on every backend.
    public var storedCode: Int64 { code }
    public init?(storedCode: Int64) { self.init(code: storedCode) }
}

extension BatchResult {
    public static func stored(subscribed: Int, updated: Int, unsubscribed: Int, joined: [[UInt8]], channel: Channel?) -> BatchResult {
        var r = BatchResult()
        r.subscribed = subscribed
        r.updated = updated
        r.unsubscribed = unsubscribed
        r.joined = joined
        r.channel = channel
        return r
    }
}

extension PublishResult {
    public static func stored(event: EventRecord, created: Bool, targets: Int64, limit: Int, channel: Channel) -> PublishResult {
        PublishResult(event: event, created: created, targets: targets, limit: limit, channel: channel)
    }
}
