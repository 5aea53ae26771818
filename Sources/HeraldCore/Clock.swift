import Foundation

/// Wall-clock time, injected so tests never sleep (style §10).
public protocol WallClock: Sendable {
    /// Seconds since 1970 with sub-second precision.
    func now() -> Double
}

extension WallClock {
    /// Whole milliseconds since 1970.
    public func nowMillis() -> Int64 { Int64((now() * 1000).rounded(.down)) }
    /// Whole seconds since 1970.
    public func nowSeconds() -> Int64 { Int64(now().rounded(.down)) }
}

/// The system clock.
public struct SystemClock: WallClock {
    public init() {}
    public func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}

/// A clock that moves only when told (tests).
public final class ManualClock: WallClock {
    private let t: Locked<Double>
    public init(_ start: Double = SystemClock().now()) { t = Locked(start) }
    public func now() -> Double { t.withLock { $0 } }
    public func advance(by seconds: Double) { t.withLock { $0 += seconds } }
    public func set(_ value: Double) { t.withLock { $0 = value } }
}

/// Monotonic time in nanoseconds, for deadlines and durations.
public enum Monotonic {
    @inline(__always)
    public static func nanos() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }

    public static func seconds() -> Double { Double(nanos()) / 1e9 }
}
