import HeraldCore
import HeraldStore

/// Metrics of the scheduler (names per style §11).
final class FanoutMetrics: Sendable {
    let registry: MetricsRegistry
    let superseded, pruned, guardTrips, catchUps, catchUpsDropped, downgrades, broadcasts, broadcastFailures: Counter
    let duration, firstPush: Histogram
    let activeEvents: Gauge
    /// Shards of shared leases held now, and the age of the oldest event they still owe.
    let leasesHeld, shardLag: Gauge
    /// Shared leases whose channel grew by shards freed elsewhere.
    let leasesTaken: Counter
    /// Token pushes of events by final result (closed set).
    let pushSent, pushFailed, pushDead, pushSkipped: Counter

    init(_ r: MetricsRegistry) {
        registry = r
        superseded = r.counter(
            "herald_events_superseded_total", help: "Events superseded by a newer update or end before reaching every target.")
        pruned = r.counter(
            "herald_subscriptions_pruned_total", help: "Subscriptions removed because APNs reported the token dead (410, BadDeviceToken).")
        guardTrips = r.counter(
            "herald_prune_guard_trips_total",
            help: "Events whose share of dead tokens was implausible: pruning stopped, subscriptions kept.")
        catchUps = r.counter("herald_catchup_pushes_total", help: "Current-state pushes sent to late joiners.")
        catchUpsDropped = r.counter(
            "herald_catchup_dropped_total",
            help: "Late joiners not sent the current state because 100000 were already waiting (they get the next event).")
        downgrades = r.counter(
            "herald_priority_downgrades_total", help: "Events sent at priority 5 because the channel's priority-10 budget was spent.")
        broadcasts = r.counter("herald_broadcast_pushes_total", help: "Broadcast requests accepted by APNs.")
        broadcastFailures = r.counter("herald_broadcast_failures_total", help: "Broadcast requests that failed.")
        duration = r.histogram(
            "herald_fanout_duration_seconds", help: "Time from an event's first push to its last answer.",
            buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600])
        firstPush = r.histogram(
            "herald_publish_to_first_push_seconds", help: "Time from accepting a publish to handing its first push to the sender.",
            buckets: Histogram.latencySeconds)
        activeEvents = r.gauge("herald_fanout_active_events", help: "Events being sent now.")
        leasesHeld = r.gauge(
            "herald_fanout_leases_held", help: "Shard leases (channel, shard) this worker holds now (0 without shared leases).")
        shardLag = r.gauge(
            "herald_fanout_shard_lag_seconds",
            help: "Age of the oldest event still owed to a shard this worker sends, from when it was due (0: none).")
        leasesTaken = r.counter(
            "herald_fanout_lease_takeovers_total", help: "Shared channel leases that grew by shards another worker had held.")
        func pushes(_ result: String) -> Counter {
            r.counter("herald_fanout_pushes_total", help: "Token pushes of events by final result.", labels: ["result": result])
        }
        pushSent = pushes("sent")
        pushFailed = pushes("failed")
        pushDead = pushes("dead_token")
        pushSkipped = pushes("skipped")
        // Both series from the start (0 until a lease is given up), so alerts see them.
        for reason in ["expired", "lost"] { _ = leasesLost(reason) }
    }

    /// Live subscriptions of every channel, by kind (refreshed by the sweep, not per scrape:
    /// counting millions of rows per scrape would load the database).
    func subscriptions(_ kind: SubscriptionKind) -> Gauge {
        registry.gauge(
            "herald_subscriptions", help: "Subscriptions in the registry, by kind (refreshed every sweep).", labels: ["kind": kind.rawValue]
        )
    }

    /// Shared leases given up before their channel was done with: `expired` (the local
    /// deadline passed) or `lost` (another worker holds a shard now).
    func leasesLost(_ reason: String) -> Counter {
        registry.counter(
            "herald_fanout_leases_lost_total", help: "Shared channel leases given up mid-work, by reason (expired, lost).",
            labels: ["reason": reason])
    }

    func events(_ kind: String, _ state: String) -> Counter {
        registry.counter("herald_events_total", help: "Events finished, by kind and final state.", labels: ["kind": kind, "state": state])
    }
}
