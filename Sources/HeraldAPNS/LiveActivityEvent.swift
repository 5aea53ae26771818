import HeraldCore

/// The kind of a Live Activity push (`aps.event`, reference §7.2).
public enum LiveActivityEventKind: String, Sendable, Codable, CaseIterable {
    case start, update, end
}

/// A publisher's event, checked against the Live Activity payload rules (reference §7) and
/// ready to be given its timestamp and rendered.
public struct LiveActivityEvent: Sendable, Equatable {
    public var kind: LiveActivityEventKind
    /// The `aps` dictionary as the publisher gave it (timestamp possibly absent).
    public var aps: [String: JSON]
    /// `aps.timestamp` when the publisher set it.
    public var timestamp: Int64?
    /// 5 or 10 when the publisher set it.
    public var priority: Int?
    /// Unix seconds when the publisher set it.
    public var expiration: Int64?

    /// The priority Herald uses when the publisher gives none: 10 for `start`, `end` and
    /// anything with an `alert` (a change that needs attention), else 5 — which does not
    /// count against the device's Live Activity budget (reference §7.6, §8.15).
    public var effectivePriority: Int {
        if let priority { return priority }
        return kind == .update && aps["alert"] == nil ? 5 : 10
    }

    /// The bytes APNs receives: `{"aps":{…}}` with `timestamp` set to `timestamp`.
    public func render(timestamp: Int64) -> [UInt8] {
        var a = aps
        a["timestamp"] = .int(timestamp)
        return JSON.object(["aps": .object(a)]).encoded()
    }
}

/// Why a publish body was refused: an HTTP status, a stable code, a sentence.
public struct PayloadError: Error, Sendable, Equatable, CustomStringConvertible {
    public var status: Int
    public var code: String
    public var message: String

    public init(_ status: Int, _ code: String, _ message: String) {
        self.status = status
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}

/// Payload limits (reference §0, §3.2, §4.3).
public enum PayloadLimits {
    /// Token pushes: 4096 bytes.
    public static let token = 4096
    /// Broadcast pushes: 5120 bytes.
    public static let broadcast = 5120
}

extension LiveActivityEvent {
    static let allowedTop: Set<String> = ["aps", "priority", "expiration"]
    static let eventsFor: [String: Set<LiveActivityEventKind>] = [
        "timestamp": [.start, .update, .end], "event": [.start, .update, .end],
        "content-state": [.start, .update, .end], "stale-date": [.start, .update], "dismissal-date": [.end],
        "relevance-score": [.start, .update], "alert": [.start, .update, .end], "attributes-type": [.start],
        "attributes": [.start], "input-push-token": [.start], "input-push-channel": [.start],
    ]

    /// Checks a publish body `{"aps":{…},"priority":5|10?,"expiration":<unix s>?}`.
    /// Throws `PayloadError` (422, or 400 for a body that is not an object) naming the
    /// field at fault.
    public static func validate(_ body: JSON) throws(PayloadError) -> LiveActivityEvent {
        guard let top = body.objectValue else { throw PayloadError(400, "invalid_body", "the body must be a JSON object") }
        for k in top.keys.sorted() where !allowedTop.contains(k) {
            throw PayloadError(422, "unknown_field", "unknown field '\(k)': a publish body has aps, priority and expiration")
        }
        guard let apsValue = top["aps"] else { throw PayloadError(422, "missing_field", "'aps' is required") }
        guard let aps = apsValue.objectValue else {
            throw PayloadError(422, "invalid_field", "'aps' must be an object, got \(apsValue.typeName)")
        }
        guard let eventValue = aps["event"] else {
            throw PayloadError(422, "missing_field", "'aps.event' is required: start, update or end")
        }
        guard let eventText = eventValue.stringValue, let kind = LiveActivityEventKind(rawValue: eventText) else {
            throw PayloadError(422, "invalid_field", "'aps.event' must be \"start\", \"update\" or \"end\"")
        }
        for (k, v) in aps.sorted(by: { $0.key < $1.key }) {
            if let kinds = eventsFor[k], !kinds.contains(kind) {
                let allowed = kinds.map(\.rawValue).sorted().joined(separator: ", ")
                throw PayloadError(422, "invalid_field", "'aps.\(k)' applies to \(allowed) events, not \(kind.rawValue)")
            }
            try check(k, v)
        }
        guard let cs = aps["content-state"] else {
            throw PayloadError(422, "missing_field", "'aps.content-state' is required for \(kind.rawValue) events")
        }
        guard cs.objectValue != nil else {
            throw PayloadError(422, "invalid_field", "'aps.content-state' must be an object, got \(cs.typeName)")
        }
        if kind == .start {
            for k in ["attributes-type", "attributes", "alert"] where aps[k] == nil {
                throw PayloadError(422, "missing_field", "'aps.\(k)' is required for start events")
            }
        }
        var priority: Int?
        if let p = top["priority"] {
            guard let v = p.intValue, v == 5 || v == 10 else {
                throw PayloadError(422, "invalid_field", "'priority' must be 5 or 10 (Live Activities)")
            }
            priority = Int(v)
        }
        var expiration: Int64?
        if let e = top["expiration"] {
            guard let v = e.intValue, v >= 0 else {
                throw PayloadError(422, "invalid_field", "'expiration' must be unix seconds (an integer ≥ 0)")
            }
            expiration = v
        }
        return LiveActivityEvent(
            kind: kind, aps: aps, timestamp: aps["timestamp"]?.intValue, priority: priority, expiration: expiration)
    }

    private static func check(_ k: String, _ v: JSON) throws(PayloadError) {
        func fail(_ what: String) -> PayloadError {
            PayloadError(422, "invalid_field", "'aps.\(k)' must be \(what), got \(v.typeName)")
        }
        switch k {
        case "timestamp", "stale-date", "dismissal-date":
            guard let i = v.intValue, i >= 0 else { throw fail("unix seconds (an integer ≥ 0)") }
        case "relevance-score":
            guard v.numberValue != nil else { throw fail("a number") }
        case "attributes-type", "input-push-channel":
            guard let s = v.stringValue, !s.isEmpty else { throw fail("a non-empty string") }
        case "attributes":
            guard v.objectValue != nil else { throw fail("an object") }
        case "input-push-token":
            guard v.intValue == 1 else { throw PayloadError(422, "invalid_field", "'aps.input-push-token' must be 1") }
        case "alert":
            guard let a = v.objectValue else { throw fail("an object with title, body and sound") }
            for (ak, av) in a {
                switch ak {
                case "title", "body":
                    if av.stringValue != nil { continue }
                    guard let o = av.objectValue, o["loc-key"]?.stringValue != nil,
                        o["loc-args"] == nil || o["loc-args"]?.arrayValue?.allSatisfy({ $0.stringValue != nil }) == true
                    else {
                        throw PayloadError(422, "invalid_field", "'aps.alert.\(ak)' must be a string or {\"loc-key\",\"loc-args\"}")
                    }
                case "sound":
                    guard av.stringValue != nil else { throw PayloadError(422, "invalid_field", "'aps.alert.sound' must be a string") }
                default:
                    continue
                }
            }
        default:
            break
        }
    }
}
