import HeraldAPNS
import HeraldCore

/// The publish rules as one pure function: every storage backend reads the channel (and an
/// event with the same `Idempotency-Key`, if any) inside its transaction, asks `decide`,
/// and writes what it says. No I/O, no clock: `now` is given.
public enum PublishRule {
    /// How far ahead of the server's clock a publisher's `aps.timestamp` may be (a clock
    /// that far off would poison the channel's ordering: every later event would be stale).
    public static let maxTimestampSkew: Int64 = 600
    /// An `Idempotency-Key` is remembered this long.
    public static let idempotencyWindowMillis: Int64 = 24 * 3600 * 1000

    /// An earlier event of the channel with the publish's `Idempotency-Key`.
    public struct KeyedEvent: Sendable, Equatable {
        public var id: String
        public var createdAtMillis: Int64
        public init(id: String, createdAtMillis: Int64) {
            self.id = id
            self.createdAtMillis = createdAtMillis
        }
    }

    /// What the backend does.
    public enum Decision: Sendable, Equatable {
        /// The key matched an event inside the window: answer with that event, write nothing.
        case replay(eventID: String)
        /// Insert the event and update the channel as `Accepted` says.
        case accept(Accepted)
    }

    /// A new event and the channel's state after it.
    public struct Accepted: Sendable, Equatable {
        public var seq: Int64
        public var apsTimestamp: Int64
        /// The exact bytes APNs receives.
        public var payload: [UInt8]
        public var priority: Int
        /// The payload limit it was checked against (dry runs report it).
        public var limit: Int
        public var broadcastState: BroadcastState
        public var lifecycle: ChannelLifecycle
        /// True: the new event becomes the channel's current state (late joiners get it);
        /// false: the channel has none (a `start` clears it).
        public var becomesCurrent: Bool
        /// An event whose key is past its window: the key is taken from it.
        public var forgetKeyOf: String?

        /// The stored record of the accepted event.
        public func record(id: String, channel: Channel, event: LiveActivityEvent, createdAtMillis: Int64) -> EventRecord {
            EventRecord(
                id: id, channelNum: channel.num, channelID: channel.id, seq: seq, kind: event.kind, apsTimestamp: apsTimestamp,
                payload: payload, priority: priority, expiration: event.expiration, state: .queued, failureReason: nil,
                supersededBy: nil, createdAtMillis: createdAtMillis, startedAtMillis: nil, finishedAtMillis: nil,
                counters: EventCounters(), passStart: nil, cursor: nil, wrapped: false, broadcastState: broadcastState,
                broadcastReason: nil)
        }
    }

    /// The payload limit of an event on a channel (reference §0): 5120 when the event goes
    /// only to a broadcast channel, else 4096 (a token push must fit; hybrid sends both).
    public static func payloadLimit(mode: ChannelMode, kind: LiveActivityEventKind) -> Int {
        mode == .broadcast && kind != .start ? PayloadLimits.broadcast : PayloadLimits.token
    }

    /// Decides a publish of `event` on the open `channel` at `nowMillis`. `existing` is the
    /// channel's event with the same idempotency key (nil: no key, no match, or a dry run).
    /// Throws `channelClosed`, `activityEnded` (an update after an end, delivery 8), `staleTimestamp` (not
    /// newer than the channel's last), `futureTimestamp` (more than `maxTimestampSkew`
    /// ahead), `payloadTooLarge` (delivery 12).
    public static func decide(
        channel: Channel, event: LiveActivityEvent, existing: KeyedEvent?, nowMillis: Int64
    ) throws(StoreError) -> Decision {
        guard channel.isOpen else { throw .channelClosed(channel.id) }
        var forget: String?
        if let existing {
            if nowMillis - existing.createdAtMillis < idempotencyWindowMillis { return .replay(eventID: existing.id) }
            forget = existing.id
        }
        if event.kind == .update && channel.lifecycle == .ended { throw .activityEnded(channel.id) }
        let now = nowMillis / 1000
        let ts: Int64
        if let given = event.timestamp {
            guard given > channel.lastTimestamp else { throw .staleTimestamp(given: given, last: channel.lastTimestamp) }
            guard given <= now + maxTimestampSkew else { throw .futureTimestamp(given: given, limit: maxTimestampSkew) }
            ts = given
        } else {
            ts = max(now, channel.lastTimestamp + 1)
        }
        let payload = event.render(timestamp: ts)
        let limit = payloadLimit(mode: channel.mode, kind: event.kind)
        if payload.count > limit {
            throw .payloadTooLarge(size: payload.count, limit: limit, broadcast: limit == PayloadLimits.broadcast)
        }
        let lifecycle: ChannelLifecycle
        switch event.kind {
        case .start: lifecycle = .started
        case .update: lifecycle = channel.lifecycle
        case .end: lifecycle = .ended
        }
        return .accept(
            Accepted(
                seq: channel.lastSeq + 1, apsTimestamp: ts, payload: payload, priority: event.effectivePriority, limit: limit,
                broadcastState: channel.mode.usesBroadcast && event.kind != .start ? .pending : .none, lifecycle: lifecycle,
                becomesCurrent: event.kind != .start, forgetKeyOf: forget))
    }
}
