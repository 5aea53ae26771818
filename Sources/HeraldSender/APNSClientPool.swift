import Foundation
import HeraldAPNS
import HeraldCore
import HeraldNet

/// A pool of HTTP/2 connections to one APNs host (issue #2): keeps each connection at the
/// peer's current stream limit, retries what APNs says to retry, resends what a GOAWAY
/// left unprocessed, reconnects with backoff, and pushes back on callers when full.
///
/// Threads: `submit` from any thread except the pool's loop (it may block for capacity);
/// results reach each template's sink on the loop thread.
public final class APNSClientPool: @unchecked Sendable {
    // @unchecked: `inbox` and `pending` are guarded by `capacity` (an NSCondition); all
    // other state is confined to `loop`.
    public let config: APNSPoolConfig
    public let loop: EventLoop
    let jwt: JWTProvider?
    let tls: TLSContext
    let logger: Logger
    let metrics: PoolMetrics

    private let capacity = NSCondition()
    private var inbox: [APNSRequest] = []
    /// The loop's side of `inbox`, swapped with it under the lock: each keeps its buffer
    /// (taking a copy and emptying the shared one allocated a new buffer per batch).
    private var taken: [APNSRequest] = []
    private var pendingCount = 0
    private var shutDown = false

    // Loop-confined.
    var queue = SendQueue()
    /// The requests in flight, each in a slot whose number its stream carries as its tag:
    /// an answer takes its request out of its slot (no object through nghttp2 and back,
    /// no cast per answer).
    var sent = SentRequests()
    /// Every decision about connections and streams (slots, the in-flight count, GOAWAY,
    /// backoff, limits, tokens); the loop runs the actions it returns.
    var machine: PoolStateMachine
    /// The live connections, by the machine's id and by object (the delegate's key).
    var links: [PoolConnectionID: Link] = [:]
    var linkOf: [ObjectIdentifier: Link] = [:]
    /// The link of the connection that answered last (`linkID(of:)`).
    var lastLink: Link?
    var random = FastRandom()
    var finishedThisTurn = 0
    /// Final results of this loop turn, delivered to their sinks with `releaseCapacity`.
    var completed: [APNSCompletion] = []
    /// Results and latencies counted on the loop, added to the shared metrics once per
    /// turn (`releaseCapacity`): no atomic per answer.
    var tally: PoolTally
    var dispatchScheduled = false
    let wallClock: WallClock = SystemClock()

    /// One connection the loop runs for the machine, with its cached `authorization`.
    final class Link {
        let id: PoolConnectionID
        let connection: HTTP2ClientConnection
        var authorizationField: (generation: Int, field: HeaderList)?
        init(id: PoolConnectionID, connection: HTTP2ClientConnection) {
            self.id = id
            self.connection = connection
        }
    }

    /// Creates the pool and starts connecting. Throws if TLS can't be set up (CA file).
    /// `jwt` nil sends no `authorization` (tests of the simulator's checks).
    public init(config: APNSPoolConfig, jwt: JWTProvider?, logger: Logger, metrics: MetricsRegistry) throws {
        self.config = config
        self.jwt = jwt
        self.logger = logger.with(subsystem: "sender")
        self.tls = try TLSContext.client(caFile: config.caFile)
        self.loop = try EventLoop(name: "apns-\(config.name)")
        self.metrics = PoolMetrics(registry: metrics, pool: config.name)
        tally = PoolTally(latency: HistogramTally(for: self.metrics.latency))
        machine = PoolStateMachine(
            connections: config.connections, maxStreamsPerConnection: config.maxStreamsPerConnection, reconnect: config.reconnect)
        let box = UncheckedBox(self)
        loop.execute {
            let me = box.value
            me.run(me.machine.start())
        }
        registerGauges(metrics)
    }

    /// Accepts `requests`, blocking while the pool already holds `maxPending` unfinished
    /// requests (backpressure). Returns false if the pool is shut down. Not on the loop.
    @discardableResult
    public func submit(_ requests: [APNSRequest]) -> Bool {
        precondition(!loop.inEventLoop, "submit would deadlock on the pool's own loop")
        guard !requests.isEmpty else { return true }
        capacity.lock()
        while pendingCount >= config.pendingLimit && !shutDown { capacity.wait() }
        return enqueueAndUnlock(requests)
    }

    /// As `submit` but never blocks: false when the pool is full. A batch whose first
    /// request is `express` may go a quarter past the limit (a small event gets in while
    /// a large fan-out keeps the pool full).
    public func trySubmit(_ requests: [APNSRequest]) -> Bool {
        guard !requests.isEmpty else { return true }
        capacity.lock()
        let limit = requests[0].express ? config.pendingLimit + config.pendingLimit / 4 : config.pendingLimit
        guard pendingCount < limit else {
            capacity.unlock()
            return false
        }
        return enqueueAndUnlock(requests)
    }

    /// With `capacity` locked: hands `requests` to the loop (false after shutdown), unlocks.
    private func enqueueAndUnlock(_ requests: [APNSRequest]) -> Bool {
        if shutDown {
            capacity.unlock()
            return false
        }
        pendingCount += requests.count
        let wasEmpty = inbox.isEmpty
        inbox.append(contentsOf: requests)
        capacity.unlock()
        if wasEmpty {
            let box = UncheckedBox(self)
            loop.execute { box.value.takeInbox() }
        }
        return true
    }

    /// Unfinished requests (queued, in flight, waiting to retry). Any thread.
    public var pending: Int {
        capacity.lock()
        defer { capacity.unlock() }
        return pendingCount
    }

    /// Waits until the pool holds no unfinished request or `timeout` passes. Not on the loop.
    public func waitIdle(timeout: Double) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        capacity.lock()
        defer { capacity.unlock() }
        while pendingCount > 0 {
            if !capacity.wait(until: deadline) { return pendingCount == 0 }
        }
        return true
    }

    /// Closes every connection and stops the loop. Unfinished requests are reported
    /// `.cancelled`. Not on the loop.
    public func shutdown() {
        capacity.lock()
        if shutDown {
            capacity.unlock()
            return
        }
        shutDown = true
        capacity.broadcast()
        capacity.unlock()
        let done = DispatchSemaphore(value: 0)
        let box = UncheckedBox(self)
        loop.execute {
            box.value.closeAll()
            done.signal()
        }
        done.wait()
        loop.shutdown()
    }

    // MARK: - loop side

    private func takeInbox() {
        capacity.lock()
        swap(&inbox, &taken)
        capacity.unlock()
        for r in taken { queue.append(r) }
        taken.removeAll(keepingCapacity: true)
        dispatch()
    }

    /// Reports a final result: its sink hears it, and its capacity is freed, at the end of
    /// this loop turn (one sink call per sink and one lock for all the answers one read
    /// brought in).
    func finish(_ r: consuming APNSRequest, _ result: consuming APNSResult) {
        metrics.record(result, attempts: r.attempts, into: &tally)
        completed.append(APNSCompletion(request: r, result: result))
        finishedThisTurn += 1
        if finishedThisTurn == 1 {
            loop.executeUnchecked { [self] in releaseCapacity() }
        }
    }

    /// Hands this turn's final results to their sinks: each run of results with the same
    /// sink in one call. Before the capacity is freed, so `waitIdle` returning means every
    /// sink has heard.
    func deliverCompleted() {
        guard !completed.isEmpty else { return }
        var batch: [APNSCompletion] = []
        swap(&batch, &completed)
        var i = batch.startIndex
        while i < batch.endIndex {
            let sink = batch[i].request.template.sink
            var j = i + 1
            while j < batch.endIndex && batch[j].request.template.sink === sink { j += 1 }
            sink.apnsCompleted(batch[i..<j])
            i = j
        }
        // Keep the buffer for the next turn (a sink cannot add to it: it never calls `finish`).
        if completed.isEmpty {
            batch.removeAll(keepingCapacity: true)
            swap(&batch, &completed)
        }
    }

    private func releaseCapacity() {
        deliverCompleted()
        let n = finishedThisTurn
        finishedThisTurn = 0
        metrics.flush(&tally)
        metrics.inFlight.set(Double(machine.inFlight))
        guard n > 0 else { return }
        capacity.lock()
        pendingCount -= n
        capacity.broadcast()
        capacity.unlock()
    }

    /// Runs `dispatch` once at the end of this loop turn: one read brings in hundreds of
    /// answers, and each would otherwise redo the token check and the round over the
    /// connections for a single free slot.
    func scheduleDispatch() {
        guard !dispatchScheduled else { return }
        dispatchScheduled = true
        loop.executeUnchecked { [self] in
            dispatchScheduled = false
            dispatch()
        }
    }

    /// Sends queued requests where the machine finds room.
    func dispatch() {
        guard !queue.isEmpty else { return }
        let bearer: BearerToken?
        do {
            bearer = try jwt?.current()
        } catch {
            logger.error("apns.jwt_sign_failed", ["error": .string("\(error)")])
            while let r = queue.popFirst() { finish(r, .outcome(.failConfig(reason: .invalidProviderToken, status: 0), nil)) }
            return
        }
        let now = Monotonic.nanos()
        let nowMillis = wallClock.nowMillis()
        let tokenNow = jwt?.clock.now() ?? 0
        var touched: [Link] = []
        // A cancelled request takes no room: ask again while requests remain and some went.
        var progress = true
        while progress && !queue.isEmpty {
            progress = false
            for case .submit(let id, let count) in machine.dispatch(queued: queue.count) {
                guard let link = links[id] else { continue }
                let c = link.connection
                let auth = bearer.map { authorization(machine.bearer(for: id, latest: $0, now: tokenNow), on: link) }
                var n = count
                // The template's parts, loaded once per run of requests sharing it (a fan-out's
                // whole batch): each load from the object retained its arrays per push.
                var shared: UnsafeMutableRawPointer?
                var method = ""
                var headers = HeaderList()
                var body: HTTP2Body?
                var keep = true
                var generatesID = false
                let none = HeaderList()
                while n > 0, let r = queue.popFirst() {
                    // Borrowed from `r`, which holds it through this turn (no retain per push).
                    // Read through a guaranteed reference and compared by its address: a call on
                    // the unowned reference, or `!==` on it, retained and released it per push.
                    let t = Unmanaged.passUnretained(r.template)
                    if t._withUnsafeGuaranteedRef({ $0.isCancelled }) {
                        finish(r, .cancelled)
                        continue
                    }
                    let id = t.toOpaque()
                    if id != shared {
                        shared = id
                        (method, headers, body, keep, generatesID) = t._withUnsafeGuaranteedRef {
                            ($0.method, $0.headers, $0.body, $0.keepResponseHeaders, $0.generatesAPNSID)
                        }
                    }
                    let uuid = generatesID ? HTTP2UUIDField(name: "apns-id", high: random.next(), low: random.next()) : nil
                    let tag = sent.nextSlot
                    let sid = c.submit(
                        method: method, path: r.pathBytes, headers: headers,
                        requestHeaders: r.headers.count == 0 ? none : r.headers, body: body,
                        keepResponseHeaders: keep, extra: auth, uuidField: uuid, now: now, tag: tag)
                    guard sid != nil else {
                        // The connection took no more (going away, out of ids): the machine
                        // hears why from its delegate events; this request waits.
                        queue.prepend(r)
                        break
                    }
                    r.attempts += 1
                    r.sentAt = now
                    r.sentAtMillis = nowMillis
                    sent.put(r, at: tag)
                    n -= 1
                }
                // Told once per run: nothing between asks the machine.
                machine.streamOpened(id, count: count - n)
                if n < count { progress = true }
                if !touched.contains(where: { $0 === link }) { touched.append(link) }
                if queue.isEmpty { break }
            }
        }
        for l in touched { l.connection.flush() }
        metrics.inFlight.set(Double(machine.inFlight))
    }

    /// Runs the machine's actions.
    func run(_ actions: [PoolAction]) {
        for a in actions {
            switch a {
            case .connect(let slot, let id): open(slot: slot, id: id)
            case .submit: dispatch()
            case .schedule(let timer, let delay):
                loop.schedule(after: delay) { [weak self] in
                    guard let self else { return }
                    self.run(self.machine.timerFired(timer))
                    self.dispatch()
                }
            case .close(let id): links[id]?.connection.close()
            }
        }
    }

    /// Writes a lower-case version-4 UUID (8-4-4-4-12) into `out` (36 bytes): the text
    /// the connection sends as `apns-id` for these random bits.
    static func formatUUID(_ out: inout [UInt8], _ high: UInt64, _ low: UInt64) {
        precondition(out.count >= 36)
        let text = Array(HTTP2UUIDField(name: "apns-id", high: high, low: low).text.utf8)
        out.replaceSubrange(0..<36, with: text)
    }

    /// The `authorization` field of a connection's token, built once per token.
    func authorization(_ t: BearerToken, on link: Link) -> HeaderList {
        if let cached = link.authorizationField, cached.generation == t.generation { return cached.field }
        var h = HeaderList()
        h.append("authorization", t.header)
        link.authorizationField = (t.generation, h)
        return h
    }

    /// Puts a request back for another attempt after a jittered backoff, or reports it
    /// exhausted.
    func retry(_ r: APNSRequest, _ outcome: PushOutcome, retryAfter: Double?) {
        r.lastRetryable = outcome
        guard r.attempts < config.retry.maxAttempts else {
            finish(r, .exhausted(outcome))
            return
        }
        if r.template.isCancelled {
            finish(r, .cancelled)
            return
        }
        metrics.retries.inc()
        let delay = config.retry.backoff.delay(r.attempts, retryAfter: retryAfter, using: &random)
        loop.schedule(after: delay) { [weak self] in
            guard let self else { return }
            if r.template.isCancelled {
                self.finish(r, .cancelled)
            } else {
                self.queue.prepend(r)
                self.dispatch()
            }
        }
    }

    private func closeAll() {
        run(machine.shutdown())
        while let r = queue.popFirst() { finish(r, .cancelled) }
        // The sinks hear the cancelled requests before `shutdown` returns.
        deliverCompleted()
        metrics.flush(&tally)
    }

    private func registerGauges(_ registry: MetricsRegistry) {
        let labels = ["pool": config.name]
        // Weak: the registry keeps the sampler and the pool's metrics keep the registry, so
        // a strong capture made a cycle that leaked every pool with its buffers, TLS context
        // and loop (LeakSanitizer, scripts/sanitizers). A pool that is gone samples 0.
        registry.sampledGauge(
            "herald_apns_pending_requests", help: "Requests accepted by the APNs pool and not finished.", labels: labels
        ) { [weak self] in Double(self?.pending ?? 0) }
    }
}
