import HeraldAPNS
import HeraldCore

/// The work that runs once per database (design "Beyond one machine"): scheduled events
/// that are due, channels whose `expires_at` came, and the expiry sweep of subscriptions.
/// A value with no I/O and no clock: the duty runner (its thread holds the database's duty
/// lock) reads what is due, asks `plan`, executes the actions in order, and sleeps until
/// `wakeAtMillis` or until it is told of new work.
public struct DutyPlan: Sendable {
    /// A channel whose `expires_at` has come, as the runner read it.
    public struct ExpiringChannel: Sendable, Equatable {
        public var id: String
        public var expiresAt: Int64
        public var lifecycle: ChannelLifecycle
        /// The channel's newest event that is not scheduled or cancelled (nil: none).
        public var lastEvent: (kind: LiveActivityEventKind, state: EventState)?

        public init(id: String, expiresAt: Int64, lifecycle: ChannelLifecycle, lastEvent: (LiveActivityEventKind, EventState)?) {
            self.id = id
            self.expiresAt = expiresAt
            self.lifecycle = lifecycle
            self.lastEvent = lastEvent.map { (kind: $0.0, state: $0.1) }
        }

        public static func == (a: Self, b: Self) -> Bool {
            a.id == b.id && a.expiresAt == b.expiresAt && a.lifecycle == b.lifecycle && a.lastEvent?.kind == b.lastEvent?.kind
                && a.lastEvent?.state == b.lastEvent?.state
        }
    }

    /// What the runner does, in order.
    public enum Action: Sendable, Equatable {
        /// Release the scheduled event (it goes out, or fails, per `PublishRule.release`).
        case release(eventID: String)
        /// The channel's activity has not ended: publish an `end` with its current
        /// content-state (`ExpiryEnd`), then close it once that end went out.
        case endActivity(channelID: String)
        /// Close the channel as `DELETE` does, why = "expired".
        case close(channelID: String)
        /// Delete expired subscriptions (design delivery 5).
        case sweepSubscriptions
    }

    /// How often expired subscriptions are swept.
    public var sweepIntervalMillis: Int64
    /// How often the lock holder reads the database even with nothing due known: work
    /// posted to another worker is found within this (the 1 s promise of `send_at`).
    public var pollMillis: Int64
    /// How long a channel's close waits for the `end` it published to go out; past it the
    /// channel is closed anyway (its unfinished events fail `channel_closed`).
    public var endGraceMillis: Int64
    /// How often a worker without the lock tries to take it.
    public var lockRetryMillis: Int64
    var lastSweepMillis: Int64?

    public init(sweepIntervalMillis: Int64 = 60_000, pollMillis: Int64 = 500, endGraceMillis: Int64 = 60_000, lockRetryMillis: Int64 = 1000)
    {
        self.sweepIntervalMillis = sweepIntervalMillis
        self.pollMillis = pollMillis
        self.endGraceMillis = endGraceMillis
        self.lockRetryMillis = lockRetryMillis
    }

    /// How soon a turn follows one that found work already due.
    static let againMillis: Int64 = 50

    /// Decides one turn at `nowMillis` with the lock held: `due` are the scheduled events
    /// with `send_at` ≤ now (in `send_at` order), `expiring` the open channels with
    /// `expires_at` ≤ now, `nextSendAt`/`nextExpiry` the earliest `send_at` and `expires_at`
    /// in storage (unix s, nil: none), read with them. Returns the actions and when to wake.
    public mutating func plan(
        nowMillis: Int64, due: [String], expiring: [ExpiringChannel], nextSendAt: Int64?, nextExpiry: Int64?
    ) -> (actions: [Action], wakeAtMillis: Int64) {
        var actions = due.map { Action.release(eventID: $0) }
        var wake = nowMillis + pollMillis
        for ch in expiring {
            switch Self.expiry(ch, nowMillis: nowMillis, graceMillis: endGraceMillis) {
            case .end: actions.append(.endActivity(channelID: ch.id))
            case .close: actions.append(.close(channelID: ch.id))
            case .wait: wake = min(wake, nowMillis + 2 * Self.againMillis)
            }
        }
        if let last = lastSweepMillis, nowMillis - last < sweepIntervalMillis {
            wake = min(wake, last + sweepIntervalMillis)
        } else {
            actions.append(.sweepSubscriptions)
            lastSweepMillis = nowMillis
        }
        // Read before this turn's actions: a time already come is one being handled now
        // (or posted since the due list was read): look again shortly, do not spin.
        for t in [nextSendAt, nextExpiry].compactMap({ $0 }) {
            wake = min(wake, t * 1000 > nowMillis ? t * 1000 : nowMillis + Self.againMillis)
        }
        return (actions, max(wake, nowMillis))
    }

    /// The lock was lost (or never held): the next holder sweeps at once.
    public mutating func lockLost() { lastSweepMillis = nil }

    enum ExpiryStep: Equatable { case end, wait, close }

    /// A due channel: an activity that has not ended gets its `end` first; an `end` still
    /// going out is waited for (up to `graceMillis` after `expires_at`); then it closes.
    static func expiry(_ ch: ExpiringChannel, nowMillis: Int64, graceMillis: Int64) -> ExpiryStep {
        switch ch.lifecycle {
        case .started: return .end
        case .idle: return .close
        case .ended:
            guard let last = ch.lastEvent, last.kind == .end, !last.state.isFinished else { return .close }
            return nowMillis < ch.expiresAt * 1000 + graceMillis ? .wait : .close
        }
    }
}

/// The `end` Herald sends for a channel that expires with its activity running: the
/// channel's current content-state, `dismissal-date` now + 15 min.
public enum ExpiryEnd {
    /// How long the ended activity stays on the Lock Screen.
    public static let dismissalSeconds: Int64 = 15 * 60

    /// The `content-state` of an event's stored payload (`{"aps":{…}}`); nil when it has none.
    public static func contentState(payload: [UInt8]) -> JSON? {
        guard let j = try? JSON.parse(payload), let aps = j.objectValue?["aps"]?.objectValue, let cs = aps["content-state"],
            cs.objectValue != nil
        else { return nil }
        return cs
    }

    /// The `end` event with `contentState` (an empty state when the channel has none),
    /// checked as a publisher's would be.
    public static func event(contentState: JSON?, nowSeconds: Int64) throws(PayloadError) -> LiveActivityEvent {
        let aps: [String: JSON] = [
            "event": "end", "content-state": contentState ?? .object([:]), "dismissal-date": .int(nowSeconds + dismissalSeconds),
        ]
        return try LiveActivityEvent.validate(.object(["aps": .object(aps)]))
    }
}
