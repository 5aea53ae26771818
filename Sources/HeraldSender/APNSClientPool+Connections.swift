import Foundation
import HeraldAPNS
import HeraldCore
import HeraldNet

/// The connection side of the pool: opens what the machine asks for and turns each
/// delegate callback into a machine event.
extension APNSClientPool: HTTP2ClientDelegate {
    func open(slot: Int, id: PoolConnectionID) {
        let c = HTTP2ClientConnection(
            loop: loop, target: config.target, tls: tls, serverName: config.serverName, config: config.http2)
        c.delegate = self
        let link = Link(id: id, connection: c)
        links[id] = link
        linkOf[ObjectIdentifier(c)] = link
        metrics.connects.inc()
        c.connect()
    }

    public func http2Ready(_ c: HTTP2ClientConnection) {
        guard let link = linkOf[ObjectIdentifier(c)] else { return }
        metrics.connections.add(1)
        machine.connected(link.id, peerMaxConcurrentStreams: c.peerMaxConcurrentStreams)
        let slot = machine.connection(link.id)?.slot ?? -1
        logger.info(
            "apns.connected", ["pool": .string(config.name), "slot": .int(Int64(slot)), "target": .string(config.target.description)])
        dispatch()
    }

    public func http2(
        _ c: HTTP2ClientConnection, completed tag: Int, result: consuming Result<HTTP2Response, HTTP2StreamFailure>
    ) {
        guard let r = sent.take(tag) else { return }
        let id = linkID(of: c)
        tally.latency.observe(Double(Monotonic.nanos() &- r.sentAt) / 1e9)
        switch consume result {
        case .success(let resp):
            if resp.status == 200 && resp.headers.isEmpty {
                // The hot case, a token push's 200 kept without its fields: what `classify`
                // and `handle` decide (delivered, no ids), without their copies of the outcome.
                if let id { machine.streamEnded(id, confirmed: true) }
                // A requester that keeps no fields (a fan-out's token push) gets no response
                // either: a 200 without fields or body says no more than `delivered`, and its
                // two arrays were retained and released with every copy of the result (the
                // sink's batch, the fan-out's answers).
                finish(r, .outcome(.delivered(apnsID: nil, uniqueID: nil), r.template.keepResponseHeaders ? resp : nil))
                break
            }
            // A success kept without its fields (a token push's 200) has none to look up.
            let fields = !resp.headers.isEmpty
            let outcome = PushOutcome.classify(
                status: resp.status, body: resp.body,
                apnsID: fields ? resp.header("apns-id") ?? resp.header("apns-request-id") : nil,
                uniqueID: fields ? resp.header("apns-unique-id") : nil, retryAfter: fields ? resp.header("retry-after") : nil)
            // Any answer but a 403 shows the connection's JWT was accepted (§1.3).
            if let id { machine.streamEnded(id, confirmed: resp.status != 403) }
            handle(r, outcome, resp, connection: id)
        case .failure(.refused):
            if let id { machine.streamEnded(id, confirmed: false) }
            // Not processed by the peer (GOAWAY / REFUSED_STREAM): resend, uncounted.
            r.attempts -= 1
            r.refusals += 1
            metrics.refused.inc()
            if r.refusals > 20 {
                retry(r, .retry(reason: .connectionLost, status: 0, after: nil), retryAfter: nil)
            } else {
                queue.prepend(r)
            }
        case .failure(let f):
            if let id { machine.streamEnded(id, confirmed: false) }
            let reason: String
            switch f {
            case .timedOut: reason = "stream timed out"
            case .reset(let code): reason = "stream reset (\(code))"
            case .connectionLost(let m): reason = m
            case .refused: reason = "refused"
            }
            logger.debug("apns.stream_failed", ["pool": .string(config.name), "error": .string(reason)])
            retry(r, .retry(reason: .connectionLost, status: 0, after: nil), retryAfter: nil)
        }
        scheduleDispatch()
    }

    /// The machine's id of `c`. Answers come in runs per connection (one read brings in
    /// hundreds), so the last one is kept: no hashing per answer.
    private func linkID(of c: HTTP2ClientConnection) -> PoolConnectionID? {
        if let l = lastLink, l.connection === c { return l.id }
        guard let l = linkOf[ObjectIdentifier(c)] else { return nil }
        lastLink = l
        return l.id
    }

    private func handle(_ r: APNSRequest, _ outcome: PushOutcome, _ resp: HTTP2Response, connection id: PoolConnectionID?) {
        switch outcome {
        case .refreshToken:
            if !r.tokenRefreshed, let jwt, let id {
                r.tokenRefreshed = true
                r.attempts -= 1
                // APNs refused this connection's token as too old: take the newest at once.
                if let g = machine.tokenExpired(id), jwt.expired(generation: g) {
                    logger.warning("apns.jwt_expired", ["pool": .string(config.name)])
                }
                queue.prepend(r)
            } else {
                logger.error(
                    "apns.jwt_rejected",
                    ["pool": .string(config.name), "reason": "ExpiredProviderToken", "hint": "check the system clock (NTP)"])
                finish(r, .outcome(.failConfig(reason: .expiredProviderToken, status: 403), resp))
            }
        case .retry(let reason, _, let after):
            if reason == .tooManyProviderTokenUpdates {
                logger.error("apns.jwt_updated_too_often", ["pool": .string(config.name)])
            }
            if reason == .shutdown || reason == .unrelatedKeyIdInToken, let id {
                // This connection is finished; resend elsewhere.
                run(machine.retire(id))
                logger.info("apns.connection_retired", ["pool": .string(config.name), "reason": .string(reason.description)])
            }
            retry(r, outcome, retryAfter: after)
        case .failConfig(let reason, let status):
            logger.error(
                "apns.config_rejected",
                ["pool": .string(config.name), "status": .int(Int64(status)), "reason": .string(reason.description)])
            finish(r, .outcome(outcome, resp))
        default:
            finish(r, .outcome(outcome, resp))
        }
    }

    public func http2SettingsChanged(_ c: HTTP2ClientConnection) {
        metrics.settings.inc()
        guard let link = linkOf[ObjectIdentifier(c)] else { return }
        machine.settingsChanged(link.id, maxConcurrentStreams: c.peerMaxConcurrentStreams)
        dispatch()
    }

    public func http2GoAway(_ c: HTTP2ClientConnection, lastStreamID: Int32, errorCode: UInt32, debugData: [UInt8]) {
        let reason = (try? JSON.parse(debugData))?["reason"]?.stringValue ?? "none"
        metrics.goAways.inc()
        logger.warning(
            "apns.goaway",
            [
                "pool": .string(config.name), "reason": .string(reason), "last_stream_id": .int(Int64(lastStreamID)),
                "error_code": .int(Int64(errorCode)),
            ])
        guard let link = linkOf[ObjectIdentifier(c)] else { return }
        run(machine.goAway(link.id))
    }

    public func http2Closed(_ c: HTTP2ClientConnection, error: NetError?) {
        if c.wasReady { metrics.connections.add(-1) }
        if lastLink?.connection === c { lastLink = nil }
        guard let link = linkOf.removeValue(forKey: ObjectIdentifier(c)) else { return }
        links[link.id] = nil
        let wasSlot = machine.slotIndex(of: link.id)
        if let error, let slot = wasSlot {
            logger.warning(
                "apns.disconnected", ["pool": .string(config.name), "slot": .int(Int64(slot)), "error": .string(error.description)])
        }
        run(machine.closed(link.id))
    }
}

/// What the pool's loop counted since its last flush into `PoolMetrics`. Loop-confined.
struct PoolTally {
    var delivered: UInt64 = 0
    var latency: HistogramTally
}

/// The pool's metrics (style §11: base units, `_total` counters, closed label sets).
final class PoolMetrics: Sendable {
    let registry: MetricsRegistry
    let pool: String
    let retries, refused, goAways, connects, settings: Counter
    let latency: Histogram
    let delivered: Counter
    let inFlight: Gauge
    let connections: Gauge

    init(registry: MetricsRegistry, pool: String) {
        self.registry = registry
        self.pool = pool
        delivered = registry.counter(
            "herald_apns_requests_total", help: "APNs requests by final result and reason.",
            labels: ["pool": pool, "result": "delivered", "reason": ""])
        let l = ["pool": pool]
        retries = registry.counter(
            "herald_apns_retries_total", help: "Requests retried after a retryable APNs answer or transport failure.", labels: l)
        refused = registry.counter(
            "herald_apns_refused_streams_total", help: "Streams the peer did not process (GOAWAY, REFUSED_STREAM), resent.", labels: l)
        goAways = registry.counter("herald_apns_goaways_total", help: "GOAWAY frames received from APNs.", labels: l)
        connects = registry.counter("herald_apns_connects_total", help: "Connection attempts to APNs.", labels: l)
        inFlight = registry.gauge("herald_apns_streams_in_flight", help: "HTTP/2 streams open to APNs.", labels: l)
        connections = registry.gauge(
            "herald_apns_connections", help: "Connections to APNs that completed TLS and the HTTP/2 preface.", labels: l)
        settings = registry.counter("herald_apns_settings_changes_total", help: "SETTINGS frames received from APNs.", labels: l)
        latency = registry.histogram(
            "herald_apns_request_duration_seconds", help: "Time from sending a request to its APNs answer.",
            buckets: Histogram.latencySeconds, labels: l)
    }

    private let results = Locked<[ResultKey: Counter]>([:])

    struct ResultKey: Hashable {
        let label: String
        let reason: String
    }

    /// Adds what `tally` counted on the loop (once per loop turn, and at shutdown).
    func flush(_ tally: inout PoolTally) {
        if tally.delivered > 0 {
            delivered.inc(tally.delivered)
            tally.delivered = 0
        }
        latency.add(&tally.latency)
    }

    /// Counts a final result: a delivery in `tally` (the hot path), anything else at once.
    func record(_ result: APNSResult, attempts: Int, into tally: inout PoolTally) {
        if case .outcome(.delivered, _) = result {
            tally.delivered += 1
            return
        }
        let (label, reason): (String, String)
        switch result {
        case .outcome(let o, _):
            switch o {
            case .dropToken(let r, _), .failEvent(let r, _), .failConfig(let r, _), .retry(let r, _, _):
                (label, reason) = (o.label, r.metricLabel)
            default: (label, reason) = (o.label, "")
            }
        case .exhausted(let o):
            if case .retry(let r, _, _) = o { (label, reason) = ("exhausted", r.metricLabel) } else { (label, reason) = ("exhausted", "") }
        case .cancelled: (label, reason) = ("cancelled", "")
        }
        let key = ResultKey(label: label, reason: reason)
        let counter = results.withLock { cache in
            if let c = cache[key] { return c }
            let c = registry.counter(
                "herald_apns_requests_total", help: "APNs requests by final result and reason.",
                labels: ["pool": pool, "result": label, "reason": reason])
            cache[key] = c
            return c
        }
        counter.inc()
    }
}
