/// Exponential backoff with equal jitter for reconnecting to PostgreSQL (the same shape
/// as the sender's `Backoff`, which this module cannot import).
///
/// With the defaults (`base` 0.1 s, `cap` 5 s) the upper bound of the pause before
/// attempt *n* (n = 1 is the first retry) is:
///
/// | retry | upper bound |
/// |---|---|
/// | 1 | 0.1 s |
/// | 2 | 0.2 s |
/// | 3 | 0.4 s |
/// | 4 | 0.8 s |
/// | 5 | 1.6 s |
/// | 6 | 3.2 s |
/// | 7+ | 5 s |
///
/// The pause drawn is uniform in [bound/2, bound]: never zero, so many workers that lost
/// one database do not come back to it in one burst. A restart of PostgreSQL takes a
/// second or two, so the cap keeps a worker's outage close to the database's.
public struct ReconnectBackoff: Sendable, Equatable {
    public var base: Duration
    public var cap: Duration

    public init(base: Duration = .milliseconds(100), cap: Duration = .seconds(5)) {
        self.base = base
        self.cap = cap
    }

    /// The upper bound before retry `n` (n ≥ 1).
    public func bound(_ n: Int) -> Duration {
        let factor = 1 << min(max(n - 1, 0), 30)
        return min(cap, base * factor)
    }

    /// A jittered pause before retry `n`.
    public func delay<G: RandomNumberGenerator>(_ n: Int, using g: inout G) -> Duration {
        let b = bound(n)
        return b / 2 + (b / 2) * Double.random(in: 0...1, using: &g)
    }
}
