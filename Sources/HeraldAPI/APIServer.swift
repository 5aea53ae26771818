import Foundation
import HeraldAPNS
import HeraldCore
import HeraldCrypto
import HeraldFanout
import HeraldHTTPServer
import HeraldSender
import HeraldStore

/// Settings of the HTTP API.
public struct APIConfig: Sendable {
    /// The listener (default 127.0.0.1:8080). Bodies up to 16 MiB (bulk registration);
    /// publishes are limited separately.
    public var http = HTTPServerConfig(host: "127.0.0.1", port: 8080, maxBodyBytes: 16 << 20)
    /// The bootstrap admin token (HERALD_ADMIN_TOKEN, or the one `serve` made).
    public var adminToken: Redacted<String>?
    /// Entries (subscribe + unsubscribe) per batch request.
    public var maxBatchEntries = 100_000
    /// A publish body larger than this is refused (the payload limit itself is 4–5 KB).
    public var maxPublishBodyBytes = 64 << 10
    /// Which Apple team sends for which bundle; a channel for a bundle no team covers is
    /// refused (422). Nil: every bundle is accepted (one key, or none).
    public var apnsTeams: APNSTeamRouting?

    public init() {}
}

/// Who is calling.
enum Caller {
    case admin
    case key(APIKey)

    var isAdmin: Bool {
        switch self {
        case .admin: true
        case .key(let k): k.role == .admin
        }
    }
}

/// The HTTP API (design "HTTP API"): routes, roles, validation, JSON errors, metrics.
/// Handlers run on libmicrohttpd's worker threads and may block on the database.
public final class APIServer: HTTPHandler {
    public let config: APIConfig
    let store: any HeraldStorage
    let engine: FanoutEngine
    let channelManagers: @Sendable (APNSEnvironment) -> APNSChannelManager?
    let metrics: MetricsRegistry
    let logger: Logger
    let adminTokenHash: [UInt8]?
    let duration: Histogram

    /// `channelManagers` gives APNs channel management per environment; nil: broadcast and
    /// hybrid channels cannot be created there.
    public init(
        config: APIConfig, store: any HeraldStorage, engine: FanoutEngine,
        channelManagers: @escaping @Sendable (APNSEnvironment) -> APNSChannelManager?, metrics: MetricsRegistry, logger: Logger
    ) {
        self.config = config
        self.store = store
        self.engine = engine
        self.channelManagers = channelManagers
        self.metrics = metrics
        self.logger = logger.with(subsystem: "api")
        adminTokenHash = config.adminToken.map { Digest.sha256(Array($0.value.utf8)) }
        duration = metrics.histogram(
            "herald_http_request_duration_seconds", help: "Time to answer an API request.", buckets: Histogram.latencySeconds)
    }

    /// Answers one request (any worker thread).
    public func handle(_ request: HTTPRequest) -> HTTPResponse {
        let start = Monotonic.nanos()
        let route = Route(rawPath: request.rawPath)
        var response: HTTPResponse
        do {
            response = try dispatch(request, route)
        } catch let e as APIError {
            response = e.response
        } catch let e as StoreError {
            response = APIError(e).response
        } catch {
            logger.error("api.internal_error", ["route": .string(route?.label ?? "unknown"), "error": .string("\(error)")])
            response = APIError(500, "internal", "the server failed to answer; the error is logged").response
        }
        // The contract: every 429 and 503 says when to come back. Errors raised deep down
        // (APNs channel management refusing, management not configured) do not know it.
        if response.status == 429 || response.status == 503, response.header("retry-after") == nil {
            response.headers.append(("retry-after", "1"))
        }
        let label = route?.label ?? "unmatched"
        metrics.counter(
            "herald_http_requests_total", help: "API requests by route, method and status.",
            labels: ["route": label, "method": Self.methodLabel(request.method), "code": String(response.status)]
        ).inc()
        duration.observe(Double(Monotonic.nanos() - start) / 1e9)
        if response.status >= 500 {
            logger.warning(
                "api.request_failed", ["route": .string(label), "method": .string(request.method), "status": .int(Int64(response.status))])
        }
        return response
    }

    static func methodLabel(_ m: String) -> String {
        ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"].contains(m) ? m : "OTHER"
    }

    private func dispatch(_ req: HTTPRequest, _ route: Route?) throws -> HTTPResponse {
        guard let route else {
            throw APIError(404, "not_found", "no route \(req.method) \(req.path); see docs/openapi.yaml")
        }
        guard route.methods.contains(req.method) else {
            throw APIError(
                405, "method_not_allowed", "\(route.label) answers \(route.methods.joined(separator: ", ")), not \(req.method)",
                headers: [("allow", route.methods.joined(separator: ", "))])
        }
        switch route {
        case .healthz: return .json(200, ["status": "ok"])
        case .readyz:
            return store.isReady()
                ? .json(200, ["status": "ready"])
                : APIError(503, "unavailable", "the database is not open or not migrated", headers: [("retry-after", "1")]).response
        case .metrics: return .text(200, metrics.render(), contentType: "text/plain; version=0.0.4; charset=utf-8")
        default: break
        }
        let caller = try authenticate(req)
        switch route {
        case .channels:
            try requireAdmin(caller)
            return req.method == "POST" ? try createChannel(req) : try listChannels()
        case .reconcile:
            try requireAdmin(caller)
            return try reconcile(req)
        case .channel(let id):
            try requireAdmin(caller)
            return req.method == "GET" ? try showChannel(id) : try closeChannel(id)
        case .keys:
            try requireAdmin(caller)
            return req.method == "POST" ? try createKey(req) : try listKeys()
        case .key(let id):
            try requireAdmin(caller)
            return try revokeKey(id)
        case .subscription(let channel, let token):
            try require(caller, .subscriber, on: channel)
            return req.method == "PUT" ? try register(req, channel, token) : try unregister(channel, token)
        case .subscriptionsBatch(let channel):
            try require(caller, .subscriber, on: channel)
            return try batch(req, channel)
        case .events(let channel):
            try require(caller, .publisher, on: channel)
            return try publish(req, channel)
        case .event(let channel, let id):
            try require(caller, .publisher, on: channel)
            return .json(200, Render.event(try store.event(channelID: channel, eventID: id)))
        default:
            throw APIError.notFound("no route")
        }
    }

    // MARK: - auth

    func authenticate(_ req: HTTPRequest) throws -> Caller {
        guard let h = req.header("authorization") else { throw APIError.unauthorized }
        let parts = h.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { throw APIError.unauthorized }
        let secret = String(parts[1]).trimmingCharacters(in: .whitespaces)
        if let adminTokenHash, constantTimeEquals(Digest.sha256(Array(secret.utf8)), adminTokenHash) {
            return .admin
        }
        guard let key = try store.authenticate(secret: secret) else { throw APIError.unauthorized }
        store.touchKey(key)
        return .key(key)
    }

    func requireAdmin(_ c: Caller) throws {
        guard c.isAdmin else { throw APIError.forbidden("this route needs an admin key") }
    }

    /// Publisher and subscriber keys act only on the channels they are scoped to.
    func require(_ c: Caller, _ role: KeyRole, on channel: String) throws {
        switch c {
        case .admin: return
        case .key(let k):
            if k.role == .admin { return }
            guard k.role == role else {
                throw APIError.forbidden("a \(k.role.rawValue) key cannot do this; it needs a \(role.rawValue) key")
            }
            guard k.covers(channel: channel) else {
                throw APIError.forbidden("this key is not scoped to channel '\(channel)'")
            }
        }
    }

    // MARK: - bodies

    /// The JSON body of a request: 415 unless JSON, 400 when malformed.
    func jsonBody(_ req: HTTPRequest, required: Bool = true) throws -> JSON? {
        if req.body.isEmpty {
            if required { throw APIError(400, "invalid_body", "a JSON body is required") }
            return nil
        }
        try requireJSONContentType(req)
        do {
            return try JSON.parse(req.body)
        } catch {
            throw APIError(400, "invalid_json", "the body is not valid JSON")
        }
    }

    func requireJSONContentType(_ req: HTTPRequest) throws {
        let ct = (req.header("content-type") ?? "").lowercased()
        let media = ct.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        guard media == "application/json" || media.hasSuffix("+json") else {
            throw APIError(415, "unsupported_media_type", "send the body as Content-Type: application/json")
        }
    }

    func object(_ j: JSON) throws -> [String: JSON] {
        guard let o = j.objectValue else { throw APIError(400, "invalid_body", "the body must be a JSON object") }
        return o
    }

    func refuseUnknown(_ o: [String: JSON], allowed: Set<String>) throws {
        if let k = o.keys.sorted().first(where: { !allowed.contains($0) }) {
            throw APIError(422, "unknown_field", "unknown field '\(k)'; expected \(allowed.sorted().joined(separator: ", "))")
        }
    }

    func string(_ o: [String: JSON], _ k: String, required: Bool) throws -> String? {
        guard let v = o[k], v != .null else {
            if required { throw APIError.missing(k) }
            return nil
        }
        guard let s = v.stringValue else { throw APIError.invalid(k, "must be a string, got \(v.typeName)") }
        return s
    }
}
