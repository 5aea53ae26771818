import HeraldAPNS
import HeraldCore

/// The rules of a publish with `send_at` (design: "A publish may carry send_at"), as pure
/// functions beside `decide`: `schedule` when it is posted, `release` when it is due. The
/// order guard and latest-wins are applied by `release`, against the channel as it is then.
extension PublishRule {
    /// How far ahead `send_at` may be: 7 days.
    public static let maxScheduleAheadSeconds: Int64 = 7 * 24 * 3600

    /// A scheduled publish as it is stored: its provisional `seq` (its place in the
    /// channel's listing until it is sent), the bytes it would have with its provisional
    /// timestamp (the publisher's, or `send_at`), checked against the limit now.
    public struct Scheduled: Sendable, Equatable {
        public var seq: Int64
        public var provisionalTimestamp: Int64
        public var payload: [UInt8]
        public var priority: Int
        public var limit: Int
        public var forgetKeyOf: String?

        /// The stored record (`scheduled`, no broadcast part yet).
        public func record(
            id: String, channel: Channel, event: LiveActivityEvent, sendAt: Int64, createdAtMillis: Int64
        ) -> EventRecord {
            var r = EventRecord(
                id: id, channelNum: channel.num, channelID: channel.id, seq: seq, kind: event.kind,
                apsTimestamp: provisionalTimestamp, payload: payload, priority: priority, expiration: event.expiration,
                state: .scheduled, failureReason: nil, supersededBy: nil, createdAtMillis: createdAtMillis, startedAtMillis: nil,
                finishedAtMillis: nil, counters: EventCounters(), passStart: nil, cursor: nil, wrapped: false, broadcastState: .none,
                broadcastReason: nil)
            r.sendAt = sendAt
            return r
        }
    }

    /// What a scheduled publish's post does.
    public enum ScheduleDecision: Sendable, Equatable {
        /// The key matched an event inside the window: answer with it, write nothing.
        case replay(eventID: String)
        case schedule(Scheduled)
    }

    /// Decides the post of `event` to go out at `sendAt` (unix s). Throws `channelClosed`,
    /// `sendAtOutOfRange` (not after now, or more than 7 days ahead), `staleTimestamp` (a
    /// publisher's `aps.timestamp` not newer than the channel's last: it could never go
    /// out), `futureTimestamp` (more than `maxTimestampSkew` after `sendAt`) and
    /// `payloadTooLarge`. The lifecycle (an update after an `end`) is not checked here: a
    /// scheduled `start` may come first; `release` checks it.
    public static func schedule(
        channel: Channel, event: LiveActivityEvent, sendAt: Int64, existing: KeyedEvent?, nowMillis: Int64
    ) throws(StoreError) -> ScheduleDecision {
        guard channel.isOpen else { throw .channelClosed(channel.id) }
        var forget: String?
        if let existing {
            if nowMillis - existing.createdAtMillis < idempotencyWindowMillis { return .replay(eventID: existing.id) }
            forget = existing.id
        }
        let now = nowMillis / 1000
        guard sendAt > now, sendAt <= now + maxScheduleAheadSeconds else {
            throw .sendAtOutOfRange(given: sendAt, now: now, limit: maxScheduleAheadSeconds)
        }
        let ts: Int64
        if let given = event.timestamp {
            guard given > channel.lastTimestamp else { throw .staleTimestamp(given: given, last: channel.lastTimestamp) }
            guard given <= sendAt + maxTimestampSkew else { throw .futureTimestamp(given: given, limit: maxTimestampSkew) }
            ts = given
        } else {
            ts = sendAt
        }
        let payload = event.render(timestamp: ts)
        let limit = payloadLimit(mode: channel.mode, kind: event.kind)
        if payload.count > limit {
            throw .payloadTooLarge(size: payload.count, limit: limit, broadcast: limit == PayloadLimits.broadcast)
        }
        return .schedule(
            Scheduled(
                seq: channel.lastSeq + 1, provisionalTimestamp: ts, payload: payload, priority: event.effectivePriority, limit: limit,
                forgetKeyOf: forget))
    }

    /// What a due scheduled event becomes.
    public enum Release: Sendable, Equatable {
        /// It goes out now as a publish would: a new `seq` (after every event of the
        /// channel), its timestamp, its bytes; the channel changes as `Accepted` says.
        case send(Accepted)
        /// It is `failed` with this reason (`activity_ended`, `channel_closed`,
        /// `stale_timestamp`, `payload_too_large`, `future_timestamp`).
        case fail(reason: String)
        /// A newer live update overtook it (the publisher's `aps.timestamp` is not newer than
        /// the channel's last): `superseded` by the channel's current event (latest wins).
        case supersede(by: String?)
    }

    /// Decides the release of the scheduled `event` on `channel` at `nowMillis`.
    public static func release(channel: Channel, event: LiveActivityEvent, nowMillis: Int64) -> Release {
        if event.kind == .update, let given = event.timestamp, channel.isOpen, given <= channel.lastTimestamp {
            // Only updates are superseded (design delivery 2: start and end never are).
            return .supersede(by: channel.currentEvent)
        }
        do {
            switch try decide(channel: channel, event: event, existing: nil, nowMillis: nowMillis) {
            case .accept(let a): return .send(a)
            case .replay: return .fail(reason: "internal")  // no key is given: cannot happen
            }
        } catch {
            switch error {
            case .futureTimestamp: return .fail(reason: "future_timestamp")
            default: return .fail(reason: error.code)
            }
        }
    }
}
