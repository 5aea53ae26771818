/// Seconds on the monotonic clock (not since 1970; never jumps with the wall clock): what
/// a lease's local deadline is measured on.
public struct MonotonicClock: WallClock {
    public init() {}
    public func now() -> Double { Monotonic.seconds() }
}
