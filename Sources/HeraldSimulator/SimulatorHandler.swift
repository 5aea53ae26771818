import Foundation
import HeraldCore
import HeraldCrypto
import HeraldNet

/// Per-connection state: which JWT it uses, since when, and how many streams it served.
final class SimConnectionState {
    /// The simulator, held by the connection while it is open (`http2ServerClosed` takes
    /// the connection out of the simulator's table, which ends the cycle), and read per
    /// request through `simRef`, borrowed: the handler's `weak` reference cost a retain and
    /// a release of the one simulator object per request (atomic writes to a count that
    /// every loop's thread shares) and ~170 instructions.
    private let sim: APNSSimulator
    let simRef: Unmanaged<APNSSimulator>

    init(sim: APNSSimulator) {
        self.sim = sim
        simRef = Unmanaged.passUnretained(sim)
    }

    var jwt: String?
    var kid: String?
    /// The team of the connection's first valid JWT (APNs binds the connection to it).
    var team: String?
    var jwtSince: Double = 0
    /// JWTs already checked on this connection: their kid and iat, or nil when invalid
    /// (an ECDSA verification per request would make the simulator the bottleneck).
    var verified: [String: (kid: String, iss: String, iat: Int64)?] = [:]
    var authorized = false
    /// The last accepted `authorization` value's bytes and its `iat` (the fast path: one
    /// memcmp, no String).
    var lastAuthorization: [UInt8]?
    var lastIssuedAt: Int64?
    var lowered = false
    var streams = 0
    var random = FastRandom()
    /// The simulator's faults and dead tokens as of `faultsVersion`: re-read (under its
    /// lock) only when they changed, so a request takes no lock for them.
    var faultsVersion = -1
    var faults = SimulatorFaults()
    var deadTokens: [String: Int64] = [:]
    /// Counts of this connection not yet added to the simulator's ledger: added once per
    /// read (`http2ServerDelivered`), before the answers are written.
    var counts = SimCounts()
    /// An answer's fields, rebuilt in the same storage for every response.
    var response = HeaderList()
    /// A token push's 200: `apns-id` and `apns-unique-id`, their values rewritten per answer.
    /// The connection's first such answer sends both fields with indexing (`okFirst`), so
    /// their names enter the HPACK table once; every later answer keeps its values out of
    /// the table but refers to the names by index: neither side Huffman-codes
    /// "apns-id" / "apns-unique-id" again (two literals per answer before).
    var ok = HeaderList.idFields("apns-id", "apns-unique-id")
    var okFirst: HeaderList? = SimConnectionState.indexedIDFields()

    static func indexedIDFields() -> HeaderList {
        var l = HeaderList()
        l.append(uuid: HTTP2UUIDField(name: "apns-id", high: 0, low: 0), noIndex: false)
        l.append(uuid: HTTP2UUIDField(name: "apns-unique-id", high: 0, low: 0), noIndex: false)
        return l
    }
    /// Answers held back by the latency fault, and whether a timer is set for the earliest.
    var delayed = SimDelayQueue()
    var delayTimerSet = false

    /// Takes the simulator's current faults and dead tokens when they changed.
    @inline(__always)
    func refresh(from sim: APNSSimulator) {
        guard sim.faultsVersion.load(ordering: .acquiring) != faultsVersion else { return }
        sim.state.withLock { s in
            faultsVersion = sim.faultsVersion.load(ordering: .acquiring)
            faults = s.faults
            deadTokens = s.deadTokens
        }
    }
}

/// Requests, token pushes accepted and answers by status, counted on a connection's loop.
struct SimCounts {
    var requests = 0
    var accepted = 0
    var ok = 0
    var other: [Int: Int] = [:]

    var isEmpty: Bool { requests == 0 && accepted == 0 && ok == 0 && other.isEmpty }

    mutating func answered(_ status: Int) {
        if status == 200 { ok += 1 } else { other[status, default: 0] += 1 }
    }

    /// Adds the counts to `ledger` and starts again from zero.
    mutating func drain(into ledger: inout SimulatorLedger) {
        ledger.requests += requests
        ledger.accepted += accepted
        if ok > 0 { ledger.responses[200, default: 0] += ok }
        for (status, n) in other { ledger.responses[status, default: 0] += n }
        requests = 0
        accepted = 0
        ok = 0
        if !other.isEmpty { other.removeAll(keepingCapacity: true) }
    }
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
        let st: SimConnectionState
        if let s = c.userInfo as? SimConnectionState {
            st = s
        } else {
            guard let sim = simulator else { return }
            st = SimConnectionState(sim: sim)
            c.userInfo = st
            sim.connections.withLock { $0[ObjectIdentifier(c)] = UncheckedBox(c) }
            sim.state.withLock {
                $0.openConnections += 1
                $0.connections += 1
            }
        }
        st.streams += 1
        st.simRef._withUnsafeGuaranteedRef { sim in
            st.refresh(from: sim)
            // The fields are read in place for the whole answer: no copy, no retain per field.
            r.withFieldBytes { b in serve(r, b, st, c, sim) }
        }
    }

    private func serve(
        _ r: HTTP2ServerRequest, _ b: HTTP2ServerRequest.FieldBytes, _ st: SimConnectionState, _ c: HTTP2ServerConnection,
        _ sim: APNSSimulator
    ) {
        let f = SimFields(b)
        let answer = evaluate(r, b, f, st, c, sim)
        let isError = answer.status >= 400
        if isError, let lower = st.faults.streamsAfterError, !st.lowered {
            st.lowered = true
            c.updateMaxConcurrentStreams(lower)
        } else if !isError && st.lowered {
            st.lowered = false
            c.updateMaxConcurrentStreams(sim.config.maxConcurrentStreams)
        }
        // Ids differ per answer: kept out of the HPACK table (reference §1.4), which saves
        // both sides an insertion and an eviction per answer.
        let token = b.path.bytesHavePrefix("/3/")
        let echo = SimFields.value(b, f.echo)
        st.counts.answered(answer.status)
        if answer.status == 200 && token && answer.reason == nil && answer.headers.isEmpty && answer.body == nil {
            // The hot answer: the connection's prebuilt fields, the two ids rewritten in place.
            if var first = st.okFirst.take() {
                Self.writeIDs(&first, echo, st)
                send(r.streamID, answer.status, first, [], st, c)
                return finish(r, st, c)
            }
            Self.writeIDs(&st.ok, echo, st)
            send(r.streamID, answer.status, st.ok, [], st, c)
            return finish(r, st, c)
        }
        // Any other answer's fields go into the connection's reused list: no String, no array.
        st.response.removeAll()
        for (name, value) in answer.headers { st.response.append(name, value) }
        let idName: StaticString = token ? "apns-id" : "apns-request-id"
        if let id = echo {
            st.response.append(idName, bytes: id, noIndex: true)
        } else {
            st.response.append(uuid: HTTP2UUIDField(name: idName, high: st.random.next(), low: st.random.next()))
        }
        if answer.status == 200 || answer.status == 201 {
            st.response.append(uuid: HTTP2UUIDField(name: "apns-unique-id", high: st.random.next(), low: st.random.next()))
        }
        var body: [UInt8] = answer.body ?? []
        if let reason = answer.reason {
            var o: [String: JSON] = ["reason": .string(reason)]
            if let ts = answer.timestamp { o["timestamp"] = .int(ts) }
            body = JSON.object(o).encoded()
            st.response.append("content-type", "application/json")
            if let ra = st.faults.retryAfter, answer.status == 429 || answer.status == 503 {
                st.response.append("retry-after", String(ra))
            }
        }
        send(r.streamID, answer.status, st.response, body, st, c)
        finish(r, st, c)
    }

    /// Writes a 200's `apns-id` (the request's own when it sent a valid one) and a fresh
    /// `apns-unique-id` into `fields` (an `idFields` list).
    @inline(__always)
    private static func writeIDs(_ fields: inout HeaderList, _ echo: UnsafeBufferPointer<UInt8>?, _ st: SimConnectionState) {
        if let id = echo {
            fields.setValue(at: 0, bytes: id)
        } else {
            fields.setUUID(at: 0, high: st.random.next(), low: st.random.next())
        }
        fields.setUUID(at: 1, high: st.random.next(), low: st.random.next())
    }

    /// Sends an answer now, or holds it back under the latency fault.
    private func send(
        _ streamID: Int32, _ status: Int, _ fields: HeaderList, _ body: [UInt8], _ st: SimConnectionState, _ c: HTTP2ServerConnection
    ) {
        if st.faults.latency > 0 {
            let due = Monotonic.nanos() &+ UInt64(st.faults.latency * 1e9)
            st.delayed.push(due: due, streamID: streamID, status: status, fields: fields, body: body)
            if !st.delayTimerSet { armDelayTimer(c, st) }
        } else {
            c.respond(streamID: streamID, status: status, headers: fields, body: body)
        }
    }

    /// The faults that act after an answer: a slow reader, a GOAWAY after N streams.
    private func finish(_ r: HTTP2ServerRequest, _ st: SimConnectionState, _ c: HTTP2ServerConnection) {
        if st.faults.slowRead > 0 { c.pauseReading(for: st.faults.slowRead) }
        if let n = st.faults.goAwayAfterStreams, st.streams == n {
            c.goAway(lastStreamID: r.streamID, debugData: Array(#"{"reason":"\#(st.faults.goAwayReason)"}"#.utf8))
        }
    }

    /// One timer per connection for the earliest held-back answer; when it fires it sends
    /// every answer due by then and sets itself again for the next.
    ///
    /// The timer fires `SimDelayQueue.slackNanos` after the earliest answer is due, so that one wake-up
    /// sends every answer that fell due in that window, in one write: answers decided one
    /// at a time (a client refilling each stream as its answer comes, the regime of a
    /// latency-bound fan-out) would otherwise cost a wake-up, a TLS record and a write each.
    /// An answer waits at least the fault's latency, never more than that slack beyond it.
    private func armDelayTimer(_ c: HTTP2ServerConnection, _ st: SimConnectionState) {
        guard let due = st.delayed.nextDue else { return }
        st.delayTimerSet = true
        let now = Monotonic.nanos()
        let at = due &+ SimDelayQueue.slackNanos(latency: st.faults.latency)
        c.loop.schedule(after: at > now ? Double(at - now) / 1e9 : 0) { [weak self, weak c] in
            guard let self, let c, let st = c.userInfo as? SimConnectionState else { return }
            st.delayTimerSet = false
            st.delayed.popDue(now: Monotonic.nanos()) { id, status, fields, body in
                c.respond(streamID: id, status: status, headers: fields, body: body)
            }
            self.armDelayTimer(c, st)
        }
    }

    func http2ServerDelivered(_ c: HTTP2ServerConnection) {
        guard let sim = simulator, let st = c.userInfo as? SimConnectionState, !st.counts.isEmpty else { return }
        sim.state.withLock { st.counts.drain(into: &$0.ledger) }
    }

    func http2ServerClosed(_ c: HTTP2ServerConnection, error: NetError?) {
        guard let sim = simulator, let st = c.userInfo as? SimConnectionState else { return }
        sim.connections.withLock { $0[ObjectIdentifier(c)] = nil }
        sim.state.withLock {
            st.counts.drain(into: &$0.ledger)
            $0.openConnections -= 1
        }
    }

    // MARK: - validation

    private func evaluate(
        _ r: HTTP2ServerRequest, _ b: HTTP2ServerRequest.FieldBytes, _ f: SimFields, _ st: SimConnectionState, _ c: HTTP2ServerConnection,
        _ sim: APNSSimulator
    ) -> SimAnswer {
        // The faults are read in place from `st` (a copy would retain their dictionary and
        // string per request).
        st.counts.requests += 1
        enum Route {
            case token(UnsafeBufferPointer<UInt8>)
            case broadcast(String)
            case channels(String)
            case allChannels(String)
        }
        let route: Route
        // The token route is the hot one: match its prefix on the bytes, without a String.
        let path = b.path
        if path.bytesHavePrefix("/3/device") && (path.count == 9 || path[9] == UInt8(ascii: "/")) {
            route = .token(path.dropping(10))
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
        case .token, .broadcast: if !b.method.bytesEqual("POST") { return .error(405, "MethodNotAllowed") }
        case .channels: if !["POST", "GET", "DELETE"].contains(r.method) { return .error(405, "MethodNotAllowed") }
        case .allChannels: if r.method != "GET" { return .error(405, "MethodNotAllowed") }
        }
        // A header sent twice (§3.1).
        if f.duplicate { return .error(400, "DuplicateHeaders") }
        if let denied = authenticate(b, f, st, c, sim) { return denied }
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
        if !st.faults.errorRates.isEmpty, let injected = injectedError(st) { return injected }
        switch route {
        case .token(let token): return tokenPush(r, b, f, token: token, st, sim)
        case .broadcast(let bundle): return broadcast(r, bundle: bundle, sim)
        case .channels(let bundle): return manageChannel(r, bundle: bundle, sim)
        case .allChannels(let bundle): return listChannels(bundle: bundle, sim)
        }
    }

    /// An error the faults inject (per status, with its probability), or nil.
    private func injectedError(_ st: SimConnectionState) -> SimAnswer? {
        for (status, p) in st.faults.errorRates where p > 0 {
            if Double(st.random.next() % 1_000_000) / 1_000_000 < p {
                return .error(status, Self.reasonFor(status))
            }
        }
        return nil
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
    private func authenticate(
        _ b: HTTP2ServerRequest.FieldBytes, _ f: SimFields, _ st: SimConnectionState, _ c: HTTP2ServerConnection, _ sim: APNSSimulator
    ) -> SimAnswer? {
        guard let authBytes = SimFields.value(b, f.authorization) else { return .error(403, "MissingProviderToken") }
        // The same JWT as this connection's last request: nothing new to check but its age.
        if let last = st.lastAuthorization, authBytes.bytesEqual(last), let iat = st.lastIssuedAt {
            if Double(iat) < sim.config.clock.now() - sim.config.jwtMaxAge { return .error(403, "ExpiredProviderToken") }
            return nil
        }
        let auth = String(decoding: authBytes, as: UTF8.self)
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
        st.lastAuthorization = Array(authBytes)
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
