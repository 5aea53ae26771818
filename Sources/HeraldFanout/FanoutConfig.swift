import HeraldCore
import HeraldSender

/// Tuning of the fan-out scheduler. Defaults suit one machine and a pool of a few
/// connections at APNs' ~1000 streams each.
public struct FanoutConfig: Sendable {
    /// Tokens read from the registry and handed to the sender per step; also the unit of
    /// round-robin fairness between channels.
    public var batchSize = 500
    /// Batches in flight per event before the scheduler waits for answers (bounds memory).
    public var maxBatchesInFlight = 16
    /// Batches read per event past the last checkpoint the database committed, before the
    /// scheduler waits for the next commit. This is the duplicate window: after a crash, at
    /// most `maxBatchesPastCheckpoint × batchSize` tokens per event (16 000 by default) get
    /// the event again (docs/operations.md). A checkpoint is written as soon as half of it
    /// is answered. While checkpoint writes fail (disk full), sending goes on without it.
    public var maxBatchesPastCheckpoint = 32
    /// How often progress is checkpointed to the database.
    public var checkpointInterval: Double = 0.25
    /// Pruning guard (design, delivery 10): when at least `pruneGuardMinSample` answers of
    /// one event came back and `pruneGuardRatio` of them say the token is dead, stop deleting.
    public var pruneGuardRatio = 0.5
    public var pruneGuardMinSample = 100
    /// How often expired subscriptions and old events are swept.
    public var sweepInterval: Double = 60
    /// Whether the sweep deletes expired subscriptions. `herald serve` turns it off: its duty
    /// runner sweeps them instead, on the one worker that holds the database's duty lock.
    public var sweepsSubscriptions = true
    /// Finished events are kept this long (the progress API reads them).
    public var eventRetention: Double = 7 * 24 * 3600
    /// Broadcast on a "most recent" channel: `apns-expiration` when the publisher gave none,
    /// and the cap (APNs stores at most 8 h, reference §4.2).
    public var broadcastStorage: Double = 8 * 3600
    /// Late joiners waiting for their catch-up push, at most (a 100 000-entry batch on a
    /// channel in the middle of a fan-out waits here while the sender is full). Past it, new
    /// ones are dropped and counted (`herald_catchup_dropped_total`): they get the channel's
    /// next event instead of the current state.
    public var maxPendingCatchUps = 100_000
    /// Shared leases (several workers on PostgreSQL): a lease's local deadline is the time
    /// the database said was left, counted from when the worker asked, less this share of
    /// it (a safety margin for the round trip and the sender's queue).
    public var leaseMargin = 0.2
    /// A shared lease is renewed once this share of its validity has passed (checkpoints
    /// renew it in the database as well).
    public var leaseRenewal = 1.0 / 3
    /// How often the unfinished events of every channel are polled when the backend is
    /// shared (the fallback of `LISTEN/NOTIFY`, and how free shards are found).
    public var pollInterval: Double = 1
    /// A shared channel with nothing to send for this long is handed back (so the shards
    /// of later events are shared out again between the workers alive then).
    public var idleLeaseRelease: Double = 30

    /// After a failed scan (the database unreachable, PostgreSQL restarting), the run's next
    /// scan waits `scanRetry.bound(n)` seconds after the n-th failure in a row (0.05 s
    /// doubling to 2 s; no jitter: the scheduler decides without randomness), so an
    /// outage costs a line of log every two seconds, not a spin.
    public var scanRetry = Backoff(base: 0.05, cap: 2)

    public init() {}
}
