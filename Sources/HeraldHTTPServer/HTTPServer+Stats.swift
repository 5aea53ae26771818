import HeraldCore

/// A snapshot of an `HTTPServer`'s counters.
public struct HTTPServerStats: Sendable, Equatable {
    /// Connections open now.
    public var connections: Int
    /// Requests whose headers are complete and whose completion is not yet reported.
    public var inFlight: Int
    /// Requests whose headers were complete (whatever became of them) since start.
    public var requestsTotal: UInt64
    /// Requests refused before any handler ran: body over the limit, unsupported transfer
    /// coding, `%00` in the path, and requests libmicrohttpd itself rejected as malformed
    /// after their request line (those never reach `requestsTotal`).
    public var rejectedTotal: UInt64
    /// Requests that ended without a response because the client went away or timed out
    /// part-way (after its request line).
    public var abortedTotal: UInt64
    /// Connections closed at once because their client address had
    /// `perIPConnectionLimit` open.
    public var refusedPerIPTotal: UInt64 = 0
    /// Connections closed at once because `maxConnections` were open and none could be
    /// reclaimed.
    public var refusedConnectionLimitTotal: UInt64 = 0
    /// Connections closed to make room at `maxConnections`: idle ones (between requests).
    public var reclaimedIdleTotal: UInt64 = 0
    /// Connections closed to make room at `maxConnections` while their request was still
    /// arriving (only when none was idle).
    public var reclaimedReadingRequestTotal: UInt64 = 0
}

extension HTTPServer {
    /// The counters now. Any thread.
    public var stats: HTTPServerStats {
        // Only the numbers leave the lock: a copy of the book kept alive would make the
        // next change on a worker copy its tables.
        let (open, refused, reclaimed) = core.book.withLock { ($0.open, $0.refused, $0.reclaimed) }
        return HTTPServerStats(
            connections: open,
            inFlight: core.inFlight.count,
            requestsTotal: core.requests.load(ordering: .relaxed),
            rejectedTotal: core.rejected.load(ordering: .relaxed),
            abortedTotal: core.aborted.load(ordering: .relaxed),
            refusedPerIPTotal: refused[.perAddressLimit] ?? 0,
            refusedConnectionLimitTotal: refused[.connectionLimit] ?? 0,
            reclaimedIdleTotal: reclaimed[.idle] ?? 0,
            reclaimedReadingRequestTotal: reclaimed[.readingRequest] ?? 0)
    }

    /// Exposes the counters as `herald_http_connections`, `herald_http_connections_max`,
    /// `herald_http_connections_refused_total{reason="per_ip_limit"|"connection_limit"}`,
    /// `herald_http_connections_reclaimed_total{phase="idle"|"reading_request"}`,
    /// `herald_http_requests_in_flight`, `herald_http_requests_received_total`,
    /// `herald_http_requests_rejected_total` and `herald_http_requests_aborted_total`,
    /// labelled `listener="<listener>"`, sampled at scrape time. `listener` must come from a closed set (`api`, `metrics`, `apns_sim`).
    public func registerMetrics(in registry: MetricsRegistry, listener: String) {
        let labels = ["listener": listener]
        let core = self.core
        registry.sampledGauge("herald_http_connections", help: "Open HTTP connections.", labels: labels) {
            [weak core] in Double(core?.book.withLock { $0.open } ?? 0)
        }
        registry.sampledGauge(
            "herald_http_connections_max", help: "The cap on open HTTP connections (beyond it idle ones are reclaimed).",
            labels: labels
        ) { [maxConnections = config.maxConnections] in Double(maxConnections) }
        for reason in ConnectionBook.RefusalReason.allCases {
            registry.sampledCounter(
                "herald_http_connections_refused_total",
                help: "HTTP connections closed as soon as accepted, by the cap that refused them.",
                labels: labels.merging(["reason": reason.rawValue]) { $1 }
            ) { [weak core] in Double(core?.book.withLock { $0.refused[reason] } ?? 0) }
        }
        for phase in ConnectionBook.ReclaimedPhase.allCases {
            registry.sampledCounter(
                "herald_http_connections_reclaimed_total",
                help: "HTTP connections closed early to make room at the connection cap, by what they were doing.",
                labels: labels.merging(["phase": phase.rawValue]) { $1 }
            ) { [weak core] in Double(core?.book.withLock { $0.reclaimed[phase] } ?? 0) }
        }
        registry.sampledGauge(
            "herald_http_requests_in_flight", help: "HTTP requests received and not yet answered.", labels: labels
        ) { [weak core] in Double(core?.inFlight.count ?? 0) }
        registry.sampledCounter(
            "herald_http_requests_received_total", help: "HTTP requests received by the listener (all routes, before routing).",
            labels: labels
        ) {
            [weak core] in Double(core?.requests.load(ordering: .relaxed) ?? 0)
        }
        registry.sampledCounter(
            "herald_http_requests_rejected_total", help: "HTTP requests refused before a handler ran.", labels: labels
        ) { [weak core] in Double(core?.rejected.load(ordering: .relaxed) ?? 0) }
        registry.sampledCounter(
            "herald_http_requests_aborted_total", help: "HTTP requests abandoned by the client part-way.",
            labels: labels
        ) { [weak core] in Double(core?.aborted.load(ordering: .relaxed) ?? 0) }
    }
}
