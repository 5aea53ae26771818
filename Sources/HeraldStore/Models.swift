import HeraldAPNS
import HeraldCore
import HeraldCrypto

/// How a channel reaches devices (design: fanout, broadcast, hybrid).
public enum ChannelMode: String, Sendable, CaseIterable, Codable {
    case fanout, broadcast, hybrid

    /// Token pushes are part of it.
    public var usesTokens: Bool { self != .broadcast }
    /// An APNs broadcast channel is part of it.
    public var usesBroadcast: Bool { self != .fanout }
}

/// APNs message storage policy of a broadcast channel (reference §4.2).
public enum StoragePolicy: String, Sendable, CaseIterable, Codable {
    case none
    case mostRecent = "most-recent"

    /// APNs' number: 0 no message stored, 1 most recent stored.
    public var apnsValue: Int { self == .none ? 0 : 1 }
}

/// Subscription kinds (design: `activity` update tokens, `push-to-start` tokens).
public enum SubscriptionKind: String, Sendable, CaseIterable, Codable {
    case activity
    case pushToStart = "push-to-start"

    var code: Int64 { self == .activity ? 0 : 1 }
    init?(code: Int64) {
        switch code {
        case 0: self = .activity
        case 1: self = .pushToStart
        default: return nil
        }
    }
}

/// A channel as stored.
public struct Channel: Sendable, Equatable {
    public var num: Int64
    public var id: String
    public var bundleID: String
    public var mode: ChannelMode
    public var environment: APNSEnvironment
    public var storagePolicy: StoragePolicy
    public var apnsChannelID: String?
    public var isOpen: Bool
    public var lifecycle: ChannelLifecycle
    public var lastSeq: Int64
    public var lastTimestamp: Int64
    public var currentEvent: String?
    public var catchUp: Bool
    public var minIntervalMillis: Int64
    public var priority10BudgetPerHour: Int64
    public var createdAtMillis: Int64
    public var closedAtMillis: Int64?
    /// Unix seconds at which Herald ends and closes the channel (nil: never; `PATCH`).
    public var expiresAt: Int64? = nil
}

/// Per-channel delivery settings (design, delivery 9; issue #3's priority budget).
public struct ChannelSettings: Sendable, Equatable {
    /// Late joiners get the current state at once.
    public var catchUp: Bool = true
    /// Updates start at least this far apart (a waiting update is replaced by a newer one).
    public var minIntervalMillis: Int64 = 0
    /// Priority-10 events per rolling hour; beyond, priority 5. 0: no budget.
    public var priority10BudgetPerHour: Int64 = 0

    public init(catchUp: Bool = true, minIntervalMillis: Int64 = 0, priority10BudgetPerHour: Int64 = 0) {
        self.catchUp = catchUp
        self.minIntervalMillis = minIntervalMillis
        self.priority10BudgetPerHour = priority10BudgetPerHour
    }
}

extension Channel {
    public var settings: ChannelSettings {
        ChannelSettings(catchUp: catchUp, minIntervalMillis: minIntervalMillis, priority10BudgetPerHour: priority10BudgetPerHour)
    }
}

/// The event states of the progress API. `scheduled` (a publish with `send_at`, waiting for
/// its time) and `cancelled` (cancelled before that) belong to events the fan-out never sees.
public enum EventState: String, Sendable, CaseIterable, Codable {
    case queued, sending, done, superseded, failed, scheduled, cancelled

    /// No more change: done, superseded, failed or cancelled.
    public var isFinished: Bool { self == .done || self == .superseded || self == .failed || self == .cancelled }

    /// `queued` and `sending`: the states the scheduler resumes (never `scheduled`: those
    /// are released by the duty runner when due).
    public static let unfinished: [EventState] = [.queued, .sending]
    public static let finished = allCases.filter(\.isFinished)
}

/// An event as stored, with its progress counters.
public struct EventRecord: Sendable, Equatable {
    public var id: String
    public var channelNum: Int64
    public var channelID: String
    public var seq: Int64
    public var kind: LiveActivityEventKind
    public var apsTimestamp: Int64
    public var payload: [UInt8]
    public var priority: Int
    public var expiration: Int64?
    public var state: EventState
    public var failureReason: String?
    public var supersededBy: String?
    public var createdAtMillis: Int64
    public var startedAtMillis: Int64?
    public var finishedAtMillis: Int64?
    public var counters: EventCounters
    public var passStart: [UInt8]?
    public var cursor: [UInt8]?
    public var wrapped: Bool
    public var broadcastState: BroadcastState
    public var broadcastReason: String?
    /// Unix seconds a scheduled publish goes out at (nil: published live).
    public var sendAt: Int64? = nil
}

/// Where a channel is in its activity's life, for the order guard (design delivery 8):
/// after an `end`, updates wait for a new `start`.
public enum ChannelLifecycle: String, Sendable, CaseIterable, Codable {
    case idle, started, ended
}

/// Whether a channel takes publishes and registrations.
public enum ChannelStatus: String, Sendable, CaseIterable, Codable {
    case open, closed
}

/// The broadcast part of an event (broadcast and hybrid channels): `none` when it has
/// none, `pending` until APNs answered, then `sent`, `failed`, or `skipped` (superseded or
/// stopped before it was sent).
public enum BroadcastState: String, Sendable, CaseIterable, Codable {
    case none, pending, sent, failed, skipped
}

/// Progress counters of one event.
public struct EventCounters: Sendable, Equatable {
    public var targets: Int64 = 0
    public var sent: Int64 = 0
    public var failed: Int64 = 0
    public var pruned: Int64 = 0
    public var retried: Int64 = 0
    /// Targets not sent because a newer event superseded this one.
    public var skipped: Int64 = 0
    /// The pruning guard's tally (design, delivery 10): final answers counted, and those
    /// that called the token invalid (`BadDeviceToken`). Kept with the progress of a shared
    /// backend so that the guard counts per event across workers; not shown by the API,
    /// and not stored on SQLite (one worker counts its own pass).
    public var answers: Int64 = 0
    public var invalid: Int64 = 0

    public init() {}
}

/// API key roles (design "Auth").
public enum KeyRole: String, Sendable, CaseIterable, Codable {
    case admin, publisher, subscriber
}

/// An API key as stored (never its secret).
public struct APIKey: Sendable, Equatable {
    public var id: String
    public var role: KeyRole
    public var channels: [String]
    public var label: String?
    public var createdAtMillis: Int64
    public var revokedAtMillis: Int64?
    public var lastUsedAtMillis: Int64?
    var secretHash: [UInt8]

    /// True when this key may act on `channel`: an exact id or a `prefix*` pattern.
    public func covers(channel: String) -> Bool {
        if role == .admin { return true }
        return channels.contains { p in
            if p == "*" { return true }
            if p.hasSuffix("*") { return channel.hasPrefix(p.dropLast()) }
            return p == channel
        }
    }
}

/// Validation of identifiers at the door.
public enum Identifier {
    /// A random identifier with a prefix: `evt_…`, `key_…` (base32 of 128 random bits). Both
    /// storage backends make their ids with it.
    public static func random(prefix: String) -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz234567".utf8)
        var out = [UInt8]()
        var acc: UInt32 = 0
        var bits = 0
        for b in SecureRandom.bytes(16) {
            acc = acc << 8 | UInt32(b)
            bits += 8
            while bits >= 5 {
                bits -= 5
                out.append(alphabet[Int((acc >> UInt32(bits)) & 31)])
            }
        }
        if bits > 0 { out.append(alphabet[Int((acc << UInt32(5 - bits)) & 31)]) }
        return prefix + String(decoding: out, as: UTF8.self)
    }

    /// Channel ids: 1–128 of `A-Z a-z 0-9 . _ - :`.
    public static func isValidChannelID(_ s: String) -> Bool {
        guard (1...128).contains(s.utf8.count) else { return false }
        return s.utf8.allSatisfy { c in
            (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c == 46 || c == 95 || c == 45 || c == 58
        }
    }

    /// Bundle ids: reverse-DNS, 1–155 of `A-Z a-z 0-9 . -`, no `.push-type.` suffix.
    public static func isValidBundleID(_ s: String) -> Bool {
        guard (1...155).contains(s.utf8.count), !s.contains(".push-type."), !s.hasPrefix("."), !s.hasSuffix(".") else {
            return false
        }
        return s.utf8.allSatisfy { c in (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c == 46 || c == 45 }
    }

    /// Push tokens: hex, even length, 16–512 bytes. Apple says not to assume a length
    /// (reference §3.1); Live Activity tokens seen are 80 bytes, device tokens 32.
    public static func tokenBytes(_ hex: String) -> [UInt8]? {
        guard (32...1024).contains(hex.utf8.count), let b = Hex.decode(hex) else { return nil }
        return b
    }
}

/// An API key's secret, `hk_<id without "key_">_<256 random bits>`, and the SHA-256 that is
/// all either backend stores of it (shown once, design "HTTP API"). One place, so both
/// backends make and hash secrets the same way.
public struct APIKeySecret: Sendable {
    public let secret: String
    public let hash: [UInt8]

    /// A fresh secret for the key `id` (`key_…`).
    public init(keyID id: String) {
        secret = "hk_" + id.dropFirst(4) + "_" + SecureRandom.token(bytes: 32)
        hash = Self.hash(secret)
    }

    /// What is stored for, and compared with, a presented secret.
    public static func hash(_ secret: String) -> [UInt8] { Digest.sha256(Array(secret.utf8)) }
}
