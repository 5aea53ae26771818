import Foundation
import HeraldCore
import HeraldCrypto
import HeraldNet

/// Per-connection state: which JWT it uses, since when, and how many streams it served.
final class SimConnectionState {
    var jwt: String?
    var kid: String?
    /// The team of the connection's first valid JWT (APNs binds the connection to it).
    var team: String?
    var jwtSince: Double = 0
    /// JWTs already checked on this connection: their kid and iat, or nil when invalid
    /// (an ECDSA verification per request would make the simulator the bottleneck).
    var verified: [String: (kid: String, iss: String, iat: Int64)?] = [:]
    var authorized = false
    /// The last accepted `authorization` value and its `iat` (the fast path).
    var lastAuthorization: String?
    var lastIssuedAt: Int64?
    var lowered = false
    var streams = 0
    var random = FastRandom()
}

/// An answer before it is sent.
struct SimAnswer {
    var status: Int
    var reason: String?
    var timestamp: Int64?
    var headers: [(String, String)] = []
    var body: [UInt8]?

    static func error(_ status: Int, _ reason: String) -> SimAnswer { SimAnswer(status: status, reason: reason) }
}

/// Validates each request the way APNs documents (reference §3, §4, §5, §6) and answers.
/// Runs on the connection's loop; shared state is behind the simulator's lock.
final class SimulatorHandler: HTTP2ServerDelegate, @unchecked Sendable {
    // @unchecked: `simulator` is set once, before the listener starts accepting.
    weak var simulator: APNSSimulator?

    func http2Server(_ c: HTTP2ServerConnection, received r: HTTP2ServerRequest) {
        guard let sim = simulator else { return }
        let st: SimConnectionState
        if let s = c.userInfo as? SimConnectionState {
            st = s
        } else {
            st = SimConnectionState()
            c.userInfo = st
            sim.connections.withLock { $0[ObjectIdentifier(c)] = UncheckedBox(c) }
            sim.state.withLock {
                $0.openConnections += 1
                $0.connections += 1
            }
        }
        st.streams += 1
        let faults = sim.state.withLock { $0.faults }
        var answer = evaluate(r, st, c, sim, faults)
        let isError = answer.status >= 400
        if isError, let lower = faults.streamsAfterError, !st.lowered {
            st.lowered = true
            c.updateMaxConcurrentStreams(lower)
        } else if !isError && st.lowered {
            st.lowered = false
            c.updateMaxConcurrentStreams(sim.config.maxConcurrentStreams)
        }
        let requestID = r.header("apns-id") ?? r.header("apns-request-id")
        let idName = r.path.hasPrefix("/3/") ? "apns-id" : "apns-request-id"
        if let id = requestID, Identifiers.isLowercaseUUID(id) {
            answer.headers.append((idName, id))
        } else {
            answer.headers.append((idName, Identifiers.lowercaseUUID(using: &st.random)))
        }
        if answer.status == 200 || answer.status == 201 {
            answer.headers.append(("apns-unique-id", Identifiers.lowercaseUUID(using: &st.random)))
        }
        if let reason = answer.reason {
            var o: [String: JSON] = ["reason": .string(reason)]
            if let ts = answer.timestamp { o["timestamp"] = .int(ts) }
            answer.body = JSON.object(o).encoded()
            answer.headers.append(("content-type", "application/json"))
            if let ra = faults.retryAfter, answer.status == 429 || answer.status == 503 {
                answer.headers.append(("retry-after", String(ra)))
            }
        }
        sim.state.withLock { $0.ledger.responses[answer.status, default: 0] += 1 }
        let send = { [weak c] in
            guard let c else { return }
            c.respond(streamID: r.streamID, status: answer.status, headers: HeaderList(answer.headers), body: answer.body ?? [])
        }
        if faults.latency > 0 {
            c.loop.schedule(after: faults.latency, send)
        } else {
            send()
        }
        if faults.slowRead > 0 { c.pauseReading(for: faults.slowRead) }
        if let n = faults.goAwayAfterStreams, st.streams == n {
            c.goAway(lastStreamID: r.streamID, debugData: Array(#"{"reason":"\#(faults.goAwayReason)"}"#.utf8))
        }
    }

    func http2ServerClosed(_ c: HTTP2ServerConnection, error: NetError?) {
        guard let sim = simulator, c.userInfo != nil else { return }
        sim.connections.withLock { $0[ObjectIdentifier(c)] = nil }
        sim.state.withLock { $0.openConnections -= 1 }
    }

    // MARK: - validation

    private func evaluate(
        _ r: HTTP2ServerRequest, _ st: SimConnectionState, _ c: HTTP2ServerConnection, _ sim: APNSSimulator,
        _ faults: SimulatorFaults
    ) -> SimAnswer {
        sim.state.withLock { $0.ledger.requests += 1 }
        enum Route {
            case token(Substring)
            case broadcast(String)
            case channels(String)
            case allChannels(String)
        }
        let route: Route
        // The token route is the hot one: match its prefix without splitting the path.
        if r.path.utf8.starts(with: "/3/device".utf8) && (r.path.utf8.count == 9 || r.path.utf8.dropFirst(9).first == UInt8(ascii: "/")) {
            route = .token(r.path.dropFirst(min(10, r.path.count)))
        } else {
            let parts = r.path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
            // parts[0] is "" for a path starting with "/".
            if parts.count == 5 && parts[0] == "" && parts[1] == "4" && parts[2] == "broadcasts" && parts[3] == "apps" {
                route = .broadcast(parts[4])
            } else if parts.count == 5 && parts[0] == "" && parts[1] == "1" && parts[2] == "apps" && parts[4] == "channels" {
                route = .channels(parts[3])
            } else if parts.count == 5 && parts[0] == "" && parts[1] == "1" && parts[2] == "apps" && parts[4] == "all-channels" {
                route = .allChannels(parts[3])
            } else {
                return .error(404, "BadPath")
            }
        }
        // Methods per route.
        switch route {
        case .token, .broadcast: if r.method != "POST" { return .error(405, "MethodNotAllowed") }
        case .channels: if !["POST", "GET", "DELETE"].contains(r.method) { return .error(405, "MethodNotAllowed") }
        case .allChannels: if r.method != "GET" { return .error(405, "MethodNotAllowed") }
        }
        // A header sent twice (§3.1). A handful of fields: pairwise is cheaper than a set.
        let hs = r.headers
        for i in 0..<hs.count {
            for j in (i + 1)..<hs.count where hs[i].name == hs[j].name { return .error(400, "DuplicateHeaders") }
        }
        if let denied = authenticate(r, st, c, sim) { return denied }
        if !sim.config.otherTeams.isEmpty {
            let bundle: String
            switch route {
            case .token:
                let topic = r.header("apns-topic") ?? ""
                bundle = topic.hasSuffix(".push-type.liveactivity") ? String(topic.dropLast(".push-type.liveactivity".count)) : topic
            case .broadcast(let b), .channels(let b), .allChannels(let b): bundle = b
            }
            if let denied = teamCheck(bundle: bundle, st, sim) { return denied }
        }
        // Injected errors apply to requests that passed authentication.
        for (status, p) in faults.errorRates where p > 0 {
            if Double(st.random.next() % 1_000_000) / 1_000_000 < p {
                return .error(status, Self.reasonFor(status))
            }
        }
        switch route {
        case .token(let token): return tokenPush(r, token: token, st, sim, faults)
        case .broadcast(let bundle): return broadcast(r, bundle: bundle, sim)
        case .channels(let bundle): return manageChannel(r, bundle: bundle, sim)
        case .allChannels(let bundle): return listChannels(bundle: bundle, sim)
        }
    }

    static func reasonFor(_ status: Int) -> String {
        switch status {
        case 429: "TooManyRequests"
        case 500: "InternalServerError"
        case 503: "ServiceUnavailable"
        case 410: "Unregistered"
        case 413: "PayloadTooLarge"
        case 403: "Forbidden"
        case 404: "BadPath"
        case 405: "MethodNotAllowed"
        default: "BadRequestParams"
        }
    }

    /// Provider-token checks (reference §2, §1.3).
    private func authenticate(_ r: HTTP2ServerRequest, _ st: SimConnectionState, _ c: HTTP2ServerConnection, _ sim: APNSSimulator)
        -> SimAnswer?
    {
        guard let auth = r.header("authorization") else { return .error(403, "MissingProviderToken") }
        // The same JWT as this connection's last request: nothing new to check but its age.
        if auth == st.lastAuthorization, let iat = st.lastIssuedAt {
            if Double(iat) < sim.config.clock.now() - sim.config.jwtMaxAge { return .error(403, "ExpiredProviderToken") }
            return nil
        }
        let lower = auth.lowercased()
        guard lower.hasPrefix("bearer ") else { return .error(403, "InvalidProviderToken") }
        let token = String(auth.dropFirst(7)).trimmingCharacters(in: .whitespaces)
        let now = sim.config.clock.now()
        let checked: (kid: String, iss: String, iat: Int64)?
        if let v = st.verified[token] {
            checked = v
        } else {
            if let jwt = ParsedJWT.parse(token), jwt.alg == "ES256", let kid = jwt.kid, let iss = jwt.iss,
                let key = sim.config.signer(keyID: kid, teamID: iss), let iat = jwt.iat, jwt.verify(with: key)
            {
                checked = (kid, iss, iat)
            } else {
                checked = nil
            }
            if st.verified.count > 16 { st.verified.removeAll() }
            st.verified[token] = .some(checked)
        }
        guard let jwt = checked else { return .error(403, "InvalidProviderToken") }
        let iat = jwt.iat
        if let kid = st.kid, kid != jwt.kid { return .error(403, "UnrelatedKeyIdInToken") }
        if Double(iat) < now - sim.config.jwtMaxAge { return .error(403, "ExpiredProviderToken") }
        if Double(iat) > now + 300 { return .error(403, "InvalidProviderToken") }
        if let current = st.jwt, current != token {
            if now - st.jwtSince < sim.config.jwtMinSwitchInterval { return .error(429, "TooManyProviderTokenUpdates") }
            st.jwt = token
            st.jwtSince = now
        } else if st.jwt == nil {
            st.jwt = token
            st.kid = jwt.kid
            st.team = jwt.iss
            st.jwtSince = now
            if !sim.config.otherTeams.isEmpty { sim.state.withLock { $0.teams.connections[jwt.iss, default: 0] += 1 } }
        }
        if !st.authorized {
            st.authorized = true
            c.updateMaxConcurrentStreams(sim.config.maxConcurrentStreams)
        }
        st.lastAuthorization = auth
        st.lastIssuedAt = iat
        return nil
    }

    /// Several teams: the connection's team must own `bundle` (reference §1.3); every
    /// request is counted under its connection's team.
    private func teamCheck(bundle: String, _ st: SimConnectionState, _ sim: APNSSimulator) -> SimAnswer? {
        let team = st.team ?? ""
        let allowed = sim.config.covers(teamID: team, bundle: bundle)
        sim.state.withLock { s in
            s.teams.requests[team, default: [:]][bundle, default: 0] += 1
            if !allowed { s.teams.mismatches += 1 }
        }
        return allowed ? nil : .error(403, "TopicMismatch")
    }
}
