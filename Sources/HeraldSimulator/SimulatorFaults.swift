import Foundation
import HeraldCore

/// Faults the simulator injects (issue #2: per-status error rates, dead tokens, GOAWAY
/// after N streams, added latency, slow reads). All optional; the default is a healthy APNs.
public struct SimulatorFaults: Sendable, Equatable {
    /// Probability per request of answering with a status instead of processing it:
    /// 429 TooManyRequests, 500 InternalServerError, 503 ServiceUnavailable (any status
    /// with a documented reason works).
    public var errorRates: [Int: Double] = [:]
    /// Seconds added before every answer.
    public var latency: Double = 0
    /// Send GOAWAY (reason `goAwayReason`) after this many streams on a connection.
    public var goAwayAfterStreams: Int?
    public var goAwayReason: String = "Shutdown"
    /// Fraction of tokens that are dead (410 Unregistered), chosen by a hash of the token so
    /// the same token is always dead.
    public var deadTokenRate: Double = 0
    /// Fraction of tokens answered 400 BadDeviceToken (by hash, like `deadTokenRate`) — what
    /// a channel set to the wrong environment looks like.
    public var badTokenRate: Double = 0
    /// `Retry-After` seconds sent with 429 and 503 answers.
    public var retryAfter: Int?
    /// Pause reading for this many seconds after each read (a slow peer).
    public var slowRead: Double = 0
    /// After an error answer, advertise this SETTINGS_MAX_CONCURRENT_STREAMS until the next
    /// success (APNs lowers the limit, even to 1, after errors — reference §1.3).
    public var streamsAfterError: UInt32?

    public init() {}

    /// The longest `latency-ms` and `slow-read-ms` accepted: an hour. Larger values (or
    /// "inf") would reach the event loop as a timer it cannot hold (UInt64 nanoseconds) and
    /// crash the simulator on its next request (found by scripts/fuzz, target faults).
    public static let maxDelayMillis: Double = 3_600_000

    /// Parses `500=0.05,503=0.05,429=0.02,latency-ms=5,goaway-after=1000,goaway-reason=Shutdown,
    /// dead-rate=0.01,retry-after=1,slow-read-ms=2,streams-after-error=1`. Nil (with the bad
    /// item) on anything unknown.
    public static func parse(_ spec: String) -> Result<SimulatorFaults, SimulatorError> {
        var f = SimulatorFaults()
        for item in spec.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !item.isEmpty {
            let kv = item.split(separator: "=", maxSplits: 1).map(String.init)
            guard kv.count == 2 else { return .failure(.badFaults("'\(item)' is not key=value")) }
            let (k, v) = (kv[0], kv[1])
            let num = Double(v)
            switch k {
            case _ where Int(k) != nil:
                guard let p = num, (0...1).contains(p), let status = Int(k), (400...599).contains(status) else {
                    return .failure(.badFaults("'\(item)': a status 400-599 and a probability 0-1"))
                }
                f.errorRates[status] = p
            case "latency-ms":
                guard let n = num, (0...maxDelayMillis).contains(n) else { return .failure(.badFaults(item)) }
                f.latency = n / 1000
            case "goaway-after":
                guard let n = Int(v), n > 0 else { return .failure(.badFaults(item)) }
                f.goAwayAfterStreams = n
            case "goaway-reason": f.goAwayReason = v
            case "dead-rate":
                guard let n = num, (0...1).contains(n) else { return .failure(.badFaults(item)) }
                f.deadTokenRate = n
            case "bad-token-rate":
                guard let n = num, (0...1).contains(n) else { return .failure(.badFaults(item)) }
                f.badTokenRate = n
            case "retry-after":
                guard let n = Int(v), n >= 0 else { return .failure(.badFaults(item)) }
                f.retryAfter = n
            case "slow-read-ms":
                guard let n = num, (0...maxDelayMillis).contains(n) else { return .failure(.badFaults(item)) }
                f.slowRead = n / 1000
            case "streams-after-error":
                guard let n = UInt32(v) else { return .failure(.badFaults(item)) }
                f.streamsAfterError = n
            default: return .failure(.badFaults("unknown fault '\(k)'"))
            }
        }
        return .success(f)
    }

    /// The spec string `parse` reads.
    public var spec: String {
        var parts = errorRates.keys.sorted().map { "\($0)=\(errorRates[$0]!)" }
        if latency > 0 { parts.append("latency-ms=\(latency * 1000)") }
        if let n = goAwayAfterStreams { parts.append("goaway-after=\(n)") }
        if goAwayReason != "Shutdown" { parts.append("goaway-reason=\(goAwayReason)") }
        if deadTokenRate > 0 { parts.append("dead-rate=\(deadTokenRate)") }
        if badTokenRate > 0 { parts.append("bad-token-rate=\(badTokenRate)") }
        if let n = retryAfter { parts.append("retry-after=\(n)") }
        if slowRead > 0 { parts.append("slow-read-ms=\(slowRead * 1000)") }
        if let n = streamsAfterError { parts.append("streams-after-error=\(n)") }
        return parts.joined(separator: ",")
    }

    /// True when `token` (hex) is dead under `deadTokenRate`.
    public func isDead(_ token: String) -> Bool { deadTokenRate > 0 && Self.hashFraction(token, salt: 1) < deadTokenRate }

    /// True when `token` answers BadDeviceToken under `badTokenRate`.
    public func isBad(_ token: String) -> Bool { badTokenRate > 0 && Self.hashFraction(token, salt: 2) < badTokenRate }

    /// A stable number in [0, 1) from the token (FNV-1a), so tests can predict it.
    public static func hashFraction(_ token: String, salt: UInt8) -> Double {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        h = (h ^ UInt64(salt)) &* 0x100_0000_01b3
        for b in token.utf8 { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
        return Double(h % 1_000_000) / 1_000_000
    }
}

/// Simulator configuration and runtime errors.
public enum SimulatorError: Error, Sendable, CustomStringConvertible {
    case badFaults(String)
    case setup(String)

    public var description: String {
        switch self {
        case .badFaults(let m): "bad --faults: \(m)"
        case .setup(let m): m
        }
    }
}
