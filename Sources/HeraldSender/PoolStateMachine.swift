import HeraldCore

/// Identity of one connection the pool opened (never reused).
struct PoolConnectionID: Hashable, Sendable, CustomStringConvertible {
    let raw: Int
    var description: String { "c\(raw)" }
}

/// A timer the pool's state machine asks for.
enum PoolTimer: Hashable, Sendable {
    /// Open a fresh connection in `slot` after a failure (backoff).
    case reconnect(slot: Int)
}

/// What the pool's loop must do after an event.
enum PoolAction: Equatable, Sendable {
    /// Open a new connection in `slot`, known from now on as the id.
    case connect(slot: Int, PoolConnectionID)
    /// Send up to `count` queued requests on the connection (its free room now).
    case submit(PoolConnectionID, count: Int)
    /// Call `timerFired` with the timer after `seconds`.
    case schedule(PoolTimer, after: Double)
    /// Close the connection gracefully: GOAWAY, let its streams finish, then go.
    case close(PoolConnectionID)
}

/// The pool's decisions as a value (the shape of async-http-client's
/// `HTTPConnectionPool+HTTP2StateMachine`): which connection each slot has, how many
/// streams each may open now, the one in-flight count, GOAWAY and drain, reconnect
/// backoff, stream-limit changes and which JWT a connection sends. It holds no
/// connection and does no I/O: each event is a `mutating` method returning the
/// `PoolAction`s for the loop to run. Loop-confined (a value inside the pool).
struct PoolStateMachine {
    enum Phase: Equatable, Sendable {
        /// TCP + TLS + preface under way.
        case connecting
        /// May take streams.
        case ready
        /// GOAWAY received or retired: finishes its streams, takes no new one.
        case draining
    }

    struct Connection: Equatable, Sendable {
        let id: PoolConnectionID
        let slot: Int
        var phase: Phase = .connecting
        /// Streams opened and not ended on this connection.
        var inFlight = 0
        /// The peer's SETTINGS_MAX_CONCURRENT_STREAMS.
        var peerLimit = 100
        /// A request with a valid JWT succeeded here: APNs then lifts its initial
        /// one-stream limit (reference §1.3). Until then the connection takes one stream.
        var confirmed = false
        /// The JWT this connection sends and since when (provider clock): it changes at
        /// most once per 20 minutes per connection (reference §2.4).
        var bearer: BearerToken?
        var bearerSince = 0.0
    }

    struct Slot: Equatable, Sendable {
        var connection: Connection?
        /// Failed connections in a row (reset once one becomes ready).
        var failures = 0
        /// A reconnect timer is pending.
        var waitingToReconnect = false
    }

    let maxStreamsPerConnection: Int
    let reconnect: Backoff
    private(set) var slots: [Slot]
    /// Connections that take no new stream and are finishing theirs.
    private(set) var draining: [Connection] = []
    /// Streams in flight over every connection: the one count (the gauge and the pool's
    /// idle check read it).
    private(set) var inFlight = 0
    private(set) var shuttingDown = false
    private var rr = 0
    private var nextID = 1
    private var random: FastRandom

    /// Apple refuses a token change on a connection within 20 minutes of the last one
    /// (429 TooManyProviderTokenUpdates): a connection keeps its token until then.
    static let minTokenSwitch = 20.0 * 60

    init(connections: Int, maxStreamsPerConnection: Int, reconnect: Backoff, random: FastRandom = FastRandom()) {
        precondition(connections > 0)
        self.maxStreamsPerConnection = maxStreamsPerConnection
        self.reconnect = reconnect
        self.random = random
        slots = Array(repeating: Slot(), count: connections)
    }

    // MARK: - events

    /// The pool starts: open every slot.
    mutating func start() -> [PoolAction] {
        (0..<slots.count).map { open($0) }
    }

    /// TLS and the preface are done on `id`.
    mutating func connected(_ id: PoolConnectionID, peerMaxConcurrentStreams: Int) {
        guard let s = slotIndex(of: id) else { return }
        slots[s].connection!.phase = .ready
        slots[s].connection!.peerLimit = peerMaxConcurrentStreams
        slots[s].failures = 0
    }

    /// The peer's SETTINGS changed the stream limit (APNs lowers it to 1 after errors and
    /// raises it again, reference §1.3).
    mutating func settingsChanged(_ id: PoolConnectionID, maxConcurrentStreams: Int) {
        update(id) { $0.peerLimit = maxConcurrentStreams }
    }

    /// Free streams on `id` right now (0 unless ready).
    func room(_ id: PoolConnectionID) -> Int {
        guard let s = slotIndex(of: id), let c = slots[s].connection else { return 0 }
        return room(c)
    }

    private func room(_ c: Connection) -> Int {
        guard c.phase == .ready, !shuttingDown else { return 0 }
        let limit = c.confirmed ? min(maxStreamsPerConnection, c.peerLimit) : 1
        return max(0, limit - c.inFlight)
    }

    /// `queued` requests wait: which connections take how many, round robin over the
    /// slots (each filled to its room, the starting slot rotating per call).
    mutating func dispatch(queued: Int) -> [PoolAction] {
        var left = queued
        var actions: [PoolAction] = []
        guard left > 0 else { return actions }
        for k in 0..<slots.count where left > 0 {
            guard let c = slots[(rr + k) % slots.count].connection else { continue }
            let n = min(room(c), left)
            guard n > 0 else { continue }
            actions.append(.submit(c.id, count: n))
            left -= n
        }
        rr = (rr + 1) % slots.count
        return actions
    }

    /// `count` streams opened on `id` (the loop reports a run of submits at once: one
    /// lookup of the connection per run, not per push).
    mutating func streamOpened(_ id: PoolConnectionID, count: Int = 1) {
        guard count > 0 else { return }
        update(id) { $0.inFlight += count }
        inFlight += count
    }

    /// A stream of `id` ended. `confirmed`: its answer shows the connection's JWT was
    /// accepted (any answer but a 403), which lifts the one-stream start.
    mutating func streamEnded(_ id: PoolConnectionID, confirmed: Bool) {
        var found = false
        update(id) {
            found = true
            $0.inFlight -= 1
            if confirmed { $0.confirmed = true }
        }
        if found { inFlight -= 1 }
    }

    /// The peer sent GOAWAY on `id`: it drains, and its slot opens a fresh connection at
    /// once (streams above last-stream-id come back as refused and are resent).
    mutating func goAway(_ id: PoolConnectionID) -> [PoolAction] {
        guard let s = slotIndex(of: id) else { return [] }
        var c = slots[s].connection!
        c.phase = .draining
        draining.append(c)
        slots[s].connection = nil
        return shuttingDown ? [] : [open(s)]
    }

    /// APNs said this connection is finished (`Shutdown`, `UnrelatedKeyIdInToken`): close
    /// it gracefully and open a fresh one in its slot.
    mutating func retire(_ id: PoolConnectionID) -> [PoolAction] {
        guard slotIndex(of: id) != nil else { return [] }
        return [.close(id)] + goAway(id)
    }

    /// `id` is gone (every stream of it was reported ended before). A draining one is
    /// forgotten; a slot's own is a failure: reconnect after a backoff.
    mutating func closed(_ id: PoolConnectionID) -> [PoolAction] {
        if let i = draining.firstIndex(where: { $0.id == id }) {
            inFlight -= draining[i].inFlight
            draining.remove(at: i)
            return []
        }
        guard let s = slotIndex(of: id) else { return [] }
        inFlight -= slots[s].connection!.inFlight
        slots[s].connection = nil
        slots[s].failures += 1
        guard !shuttingDown else { return [] }
        slots[s].waitingToReconnect = true
        return [.schedule(.reconnect(slot: s), after: reconnect.delay(slots[s].failures, using: &random))]
    }

    mutating func timerFired(_ timer: PoolTimer) -> [PoolAction] {
        switch timer {
        case .reconnect(let s):
            guard slots[s].waitingToReconnect else { return [] }
            slots[s].waitingToReconnect = false
            guard !shuttingDown, slots[s].connection == nil else { return [] }
            return [open(s)]
        }
    }

    /// Close everything; open nothing again.
    mutating func shutdown() -> [PoolAction] {
        shuttingDown = true
        for s in slots.indices { slots[s].waitingToReconnect = false }
        return slots.compactMap { $0.connection.map { .close($0.id) } } + draining.map { .close($0.id) }
    }

    // MARK: - JWT

    /// The token `id` sends with `latest` current: a connection adopts a newer one only
    /// 20 minutes after its last change (reference §2.4); a fresh connection takes it.
    mutating func bearer(for id: PoolConnectionID, latest: BearerToken, now: Double) -> BearerToken {
        var chosen = latest
        update(id) { c in
            if let cur = c.bearer, cur.generation == latest.generation || now - c.bearerSince < Self.minTokenSwitch {
                chosen = cur
            } else {
                c.bearer = latest
                c.bearerSince = now
            }
        }
        return chosen
    }

    /// APNs answered `ExpiredProviderToken` on `id`: its token is dropped, so the next
    /// request there takes the newest at once (the 20-minute rule protects changes, not
    /// a token APNs no longer accepts). Returns the generation it had.
    @discardableResult
    mutating func tokenExpired(_ id: PoolConnectionID) -> Int? {
        var had: Int?
        update(id) {
            had = $0.bearer?.generation
            $0.bearer = nil
        }
        return had
    }

    // MARK: - lookups

    /// The connection `id`, in its slot or draining.
    func connection(_ id: PoolConnectionID) -> Connection? {
        if let s = slotIndex(of: id) { return slots[s].connection }
        return draining.first { $0.id == id }
    }

    func slotIndex(of id: PoolConnectionID) -> Int? {
        slots.firstIndex { $0.connection?.id == id }
    }

    private mutating func update(_ id: PoolConnectionID, _ body: (inout Connection) -> Void) {
        if let s = slotIndex(of: id) {
            body(&slots[s].connection!)
        } else if let i = draining.firstIndex(where: { $0.id == id }) {
            body(&draining[i])
        }
    }

    private mutating func open(_ s: Int) -> PoolAction {
        let id = PoolConnectionID(raw: nextID)
        nextID += 1
        slots[s].connection = Connection(id: id, slot: s)
        return .connect(slot: s, id)
    }
}
