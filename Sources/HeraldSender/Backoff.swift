import HeraldCore

/// Exponential backoff with full jitter, bounded — for retries of one request and for
/// reconnects (reference §8.3, §8.14).
///
/// With the defaults (`base` 0.5 s, `cap` 30 s) the upper bound of the delay before
/// attempt *n* (n = 1 is the first retry) is:
///
/// | retry | upper bound |
/// |---|---|
/// | 1 | 0.5 s |
/// | 2 | 1 s |
/// | 3 | 2 s |
/// | 4 | 4 s |
/// | 5 | 8 s |
/// | 6 | 16 s |
/// | 7+ | 30 s |
///
/// The delay drawn is uniform in [bound/2, bound] ("equal jitter": never zero, so a burst
/// of failures does not come back as a burst). A `Retry-After` from APNs is a floor.
public struct Backoff: Sendable, Equatable {
    public var base: Double
    public var cap: Double

    public init(base: Double = 0.5, cap: Double = 30) {
        self.base = base
        self.cap = cap
    }

    /// The upper bound before retry `n` (n ≥ 1).
    public func bound(_ n: Int) -> Double {
        let exp = Double(1 << min(max(n - 1, 0), 30))
        return min(cap, base * exp)
    }

    /// A jittered delay before retry `n`, at least `retryAfter` when given.
    public func delay<G: RandomNumberGenerator>(_ n: Int, retryAfter: Double? = nil, using g: inout G) -> Double {
        let b = bound(n)
        let d = b / 2 + Double.random(in: 0...(b / 2), using: &g)
        if let ra = retryAfter, ra > d { return min(ra, 3600) }
        return d
    }
}

/// How the pool retries one request.
public struct RetryPolicy: Sendable, Equatable {
    /// Total attempts per request, the first included.
    public var maxAttempts: Int
    public var backoff: Backoff

    public init(maxAttempts: Int = 6, backoff: Backoff = Backoff()) {
        self.maxAttempts = maxAttempts
        self.backoff = backoff
    }
}
