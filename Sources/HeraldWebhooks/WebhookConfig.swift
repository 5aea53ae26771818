/// Settings of the webhooks (design, "Webhooks"), with their defaults.
public struct WebhookConfig: Sendable {
    /// Which receivers may be reached: loopback yes, private networks only with
    /// `HERALD_WEBHOOK_ALLOW_PRIVATE`.
    public var policy = WebhookAddressPolicy()
    /// Timeouts, CA file (`HERALD_WEBHOOK_CA_FILE`), response size.
    public var poster = WebhookPosterConfig()
    /// Backoff with jitter, given up 24 h after a delivery was created.
    public var schedule = WebhookRetrySchedule()
    /// Reports waiting in memory for their outbox write (guard trips, and facts the storage
    /// could not record itself), pruned tokens counted one each, at most; past it new ones are
    /// dropped and counted (`herald_webhook_dropped_total{reason="queue_full"}`), never
    /// waited for: the fan-out does not slow down.
    public var pendingLimit = 200_000
    /// Deliveries the outbox table holds at most; past it new ones are dropped and counted
    /// (`reason="outbox_full"`).
    public var outboxCapacity = 100_000
    /// Posts in flight at once over all webhooks (one thread each); one per webhook.
    public var maxInFlight = 8
    /// How often the dispatcher looks for deliveries other workers wrote, refreshes the
    /// webhook list and the gauges, at most this long apart.
    public var pollInterval = 0.25
    /// The dispatch right's lease (PostgreSQL), renewed every third of it.
    public var dispatchLeaseMillis: Int64 = 15_000

    public init() {}
}
