import HeraldCore
import HeraldStore

/// The gauges an operator of several workers watches (docs/operations.md, "Metrics"):
/// the shard leases this worker holds, and how far behind its shards are.
extension FanoutScheduler {
    /// Sets `herald_fanout_leases_held` (shards of shared leases held now; 0 on SQLite,
    /// which has no leases to share) and `herald_fanout_shard_lag_seconds`: the age of the
    /// oldest event still owed to a shard this worker sends — running, draining or waiting
    /// — counted from when it was due (its publish, or its `send_at`); 0 when none is owed.
    /// A shard stuck behind (a slow or stalled part of a fan-out, a backlog of events)
    /// shows as a lag that keeps growing. From `housekeeping`, at most every
    /// `gaugeInterval` seconds.
    mutating func updateGauges() {
        let now = clock.now()
        guard now - lastGauges >= Self.gaugeInterval else { return }
        lastGauges = now
        var held = 0
        var oldestDue = Double.infinity
        for ch in channels.values {
            if ch.lease.validFor != nil { held += ch.lease.shards.bits.nonzeroBitCount }
            for id in [ch.active].compactMap({ $0 }) + ch.draining + ch.helpers {
                if let r = runs[id] { oldestDue = min(oldestDue, Self.due(r.record)) }
            }
            if let first = ch.pending.first { oldestDue = min(oldestDue, Self.due(first)) }
        }
        metrics.leasesHeld.set(Double(held))
        metrics.shardLag.set(oldestDue.isFinite ? max(0, now - oldestDue) : 0)
    }

    static let gaugeInterval = 0.5

    /// When an event was due to go out (wall-clock seconds).
    static func due(_ e: EventRecord) -> Double {
        max(Double(e.createdAtMillis) / 1000, Double(e.sendAt ?? 0))
    }
}
