/// When a failed webhook delivery is tried again (design, "Webhooks": retried with backoff
/// for 24 h, then dropped and counted).
///
/// | attempt that failed | base delay | tried again after (jitter: ½ to 1 × base) |
/// |---|---|---|
/// | 1 | 5 s | 2.5–5 s |
/// | 2 | 10 s | 5–10 s |
/// | 3 | 20 s | 10–20 s |
/// | n | 5 s × 2ⁿ⁻¹, at most 30 min | … |
///
/// A receiver's `Retry-After` (429, 503) is honoured when longer, within the same cap. A
/// delivery whose next try would fall more than `giveUpAfter` after it was created is
/// dropped instead.
public struct WebhookRetrySchedule: Sendable, Equatable {
    public var first: Double = 5
    public var cap: Double = 30 * 60
    public var giveUpAfter: Double = 24 * 3600

    public init(first: Double = 5, cap: Double = 30 * 60, giveUpAfter: Double = 24 * 3600) {
        self.first = first
        self.cap = cap
        self.giveUpAfter = giveUpAfter
    }

    /// The time of the next try after `attempts` failed tries (≥ 1) of a delivery created
    /// at `createdAt`, or nil when it is to be dropped. `unit` is a random number in [0, 1)
    /// (injected, so tests decide it).
    public func next(attempts: Int, createdAt: Double, now: Double, unit: Double, retryAfter: Double? = nil) -> Double? {
        let exponent = Double(min(max(attempts, 1) - 1, 30))
        let base = min(cap, first * Double(1 << Int(exponent)))
        var delay = base * (0.5 + 0.5 * min(max(unit, 0), 1))
        if let retryAfter, retryAfter.isFinite, retryAfter > delay { delay = min(retryAfter, cap) }
        let at = now + delay
        return at - createdAt > giveUpAfter ? nil : at
    }
}
