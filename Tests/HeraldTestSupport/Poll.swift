import Foundation

/// Polling with a deadline: how the fault tests wait for a condition instead of sleeping.
public enum Poll {
    /// Evaluates `condition` every `interval` seconds until it holds (true) or `timeout`
    /// passes (false). Rethrows what `condition` throws. Any thread.
    @discardableResult
    public static func until(
        timeout: Double, interval: Double = 0.01, _ condition: () throws -> Bool
    ) rethrows -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while true {
            if try condition() { return true }
            if Date() >= deadline { return false }
            usleep(useconds_t(interval * 1e6))
        }
    }
}

/// Percentiles of a sample, for latency reports.
public struct Percentiles: Sendable, CustomStringConvertible {
    public let count: Int
    public let p50: Double
    public let p99: Double
    public let max: Double

    /// Nearest-rank percentiles of `values` (seconds or any unit); zeros when empty.
    public init(_ values: [Double]) {
        let s = values.sorted()
        count = s.count
        func rank(_ p: Double) -> Double {
            guard !s.isEmpty else { return 0 }
            return s[Swift.min(s.count - 1, Swift.max(0, Int((p * Double(s.count)).rounded(.up)) - 1))]
        }
        p50 = rank(0.50)
        p99 = rank(0.99)
        max = s.last ?? 0
    }

    public var description: String {
        String(format: "n=%d p50=%.1fms p99=%.1fms max=%.1fms", count, p50 * 1000, p99 * 1000, max * 1000)
    }
}
