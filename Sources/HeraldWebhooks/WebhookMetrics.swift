import HeraldCore

/// The webhooks' metrics (docs/operations.md): label values from closed sets only.
struct WebhookMetrics: Sendable {
    let registry: MetricsRegistry
    /// Deliveries waiting in the outbox table (every worker reports the shared table).
    let depth: Gauge
    /// Age of the oldest waiting delivery, 0 when none waits.
    let oldestAge: Gauge
    /// Reports recorded with their facts, not yet turned into deliveries.
    let reports: Gauge

    init(_ r: MetricsRegistry) {
        registry = r
        depth = r.gauge("herald_webhook_outbox_deliveries", help: "Webhook deliveries waiting in the outbox table.")
        oldestAge = r.gauge(
            "herald_webhook_oldest_undelivered_age_seconds", help: "Age of the oldest webhook delivery not yet delivered.")
        reports = r.gauge("herald_webhook_reports", help: "Webhook reports recorded, not yet turned into deliveries.")
        for t in WebhookEvent.Kind.allCases {
            for result in ["delivered", "failed", "dropped"] { _ = deliveries(t.rawValue, result) }
        }
        for reason in ["expired", "outbox_full", "webhook_deleted", "queue_full"] { _ = dropped(reason) }
    }

    /// Tries by event type and result: `delivered` (2xx), `failed` (anything else; retried
    /// unless given up), `dropped` (given up or removed unsent).
    func deliveries(_ type: String, _ result: String) -> Counter {
        registry.counter(
            "herald_webhook_deliveries_total", help: "Webhook delivery attempts by event type and result.",
            labels: ["type": type, "result": result])
    }

    /// Deliveries (or pruned tokens, for `queue_full`) given up, by reason.
    func dropped(_ reason: String) -> Counter {
        registry.counter(
            "herald_webhook_dropped_total", help: "Webhook deliveries dropped undelivered, by reason.", labels: ["reason": reason])
    }
}
