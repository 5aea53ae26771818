/// One holding of the lease on a (channel, shard): who holds it, which claim of it this
/// is, and until when.
public struct ShardLease: Sendable, Hashable {
    public let channel: Int64
    public let shard: Int64
    public let owner: WorkerID
    /// Goes up by one on every claim of this (channel, shard): (owner, attempt) fences.
    public let attempt: Int64
    /// The expiry by the database's clock (microseconds since 1970).
    public let expiresAtMicros: Int64
    /// The worker's own deadline: when it must stop sending for the shard. The time the
    /// lease had left by the database's clock, counted from the moment the request that
    /// granted it was sent, so it is never later than the database's expiry.
    public let localDeadline: ContinuousClock.Instant

    /// True while the worker may still send for the shard by its own clock.
    public func isHeld(at now: ContinuousClock.Instant) -> Bool { now < localDeadline }
}
