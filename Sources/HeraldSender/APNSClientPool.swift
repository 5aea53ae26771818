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
    private var pendingCount = 0
    private var shutDown = false

    // Loop-confined.
    var queue = SendQueue()
    var slots: [Slot] = []
    var draining: [ObjectIdentifier: HTTP2ClientConnection] = [:]
    var rr = 0
    var random = FastRandom()
    var inFlight = 0
    var waitingRetry = 0
    var finishedThisTurn = 0
    var dispatchScheduled = false
    var idScratch = [UInt8](repeating: 0, count: 36)
    let wallClock: WallClock = SystemClock()

    final class Slot {
        let index: Int
        var connection: HTTP2ClientConnection?
        /// A request with a valid JWT succeeded: APNs then lifts its initial one-stream
        /// limit (§1.3).
        var confirmed = false
        var inFlight = 0
        var failures = 0
        var reconnectTimer: LoopTimer?
        /// The JWT this connection sends and since when (provider clock): it changes at
        /// most once per 20 minutes per connection (reference §2.4).
        var bearer: BearerToken?
        var bearerSince = 0.0
        var authorizationField: (generation: Int, field: HeaderList)?
        init(index: Int) { self.index = index }
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
        let box = UncheckedBox(self)
        loop.execute {
            let me = box.value
            me.slots = (0..<config.connections).map { Slot(index: $0) }
            for s in me.slots { me.open(s) }
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
        let batch = inbox
        inbox.removeAll(keepingCapacity: true)
        capacity.unlock()
        for r in batch { queue.append(r) }
        dispatch()
    }

    /// Reports a final result; its capacity is freed at the end of this loop turn (one
    /// lock for all the answers one read brought in).
    func finish(_ r: APNSRequest, _ result: APNSResult) {
        metrics.record(result, attempts: r.attempts)
        r.template.sink.apnsCompleted(r, result: result)
        finishedThisTurn += 1
        if finishedThisTurn == 1 {
            loop.executeUnchecked { [self] in releaseCapacity() }
        }
    }

    private func releaseCapacity() {
        let n = finishedThisTurn
        finishedThisTurn = 0
        guard n > 0 else { return }
        capacity.lock()
        pendingCount -= n
        capacity.broadcast()
        capacity.unlock()
    }

    /// Free stream slots on `s` right now.
    func room(_ s: Slot) -> Int {
        guard let c = s.connection, c.state == .ready else { return 0 }
        let limit = s.confirmed ? min(config.maxStreamsPerConnection, c.peerMaxConcurrentStreams) : 1
        return limit - c.activeStreams
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

    /// Sends queued requests while connections have room, spreading them round robin.
    func dispatch() {
        guard !queue.isEmpty else { return }
        var touched: [Slot] = []
        let bearer: BearerToken?
        do {
            bearer = try jwt?.current()
        } catch {
            logger.error("apns.jwt_sign_failed", ["error": .string("\(error)")])
            while let r = queue.popFirst() { finish(r, .outcome(.failConfig(reason: .invalidProviderToken, status: 0), nil)) }
            return
        }
        // Rounds over the connections, each filled to its free room, until the queue is
        // empty or no connection can take more.
        var blocked: Set<ObjectIdentifier>?
        var progress = true
        let now = Monotonic.nanos()
        let nowMillis = wallClock.nowMillis()
        while progress && !queue.isEmpty {
            progress = false
            for k in 0..<slots.count {
                let s = slots[(rr + k) % slots.count]
                guard let c = s.connection, blocked?.contains(ObjectIdentifier(s)) != true else { continue }
                var n = room(s)
                guard n > 0 else { continue }
                while n > 0, let r = queue.popFirst() {
                    if r.template.isCancelled {
                        finish(r, .cancelled)
                        continue
                    }
                    let auth = bearer.map { authorization(adopt($0, on: s), on: s) }
                    let req = HTTP2Request(
                        method: r.template.method, path: r.path, headers: r.template.headers, requestHeaders: r.headers,
                        body: r.template.body, keepResponseHeaders: r.template.keepResponseHeaders)
                    let id: Int32?
                    if r.template.generatesAPNSID {
                        Self.formatUUID(&idScratch, random.next(), random.next())
                        id = idScratch.withUnsafeBufferPointer { c.submit(req, extra: auth, idField: ("apns-id", $0), now: now, context: r) }
                    } else {
                        id = c.submit(req, extra: auth, now: now, context: r)
                    }
                    guard id != nil else {
                        queue.prepend(r)
                        blocked = (blocked ?? []).union([ObjectIdentifier(s)])
                        break
                    }
                    r.attempts += 1
                    r.sentAt = now
                    r.sentAtMillis = nowMillis
                    s.inFlight += 1
                    inFlight += 1
                    metrics.inFlight.add(1)
                    n -= 1
                    progress = true
                }
                if !touched.contains(where: { $0 === s }) { touched.append(s) }
                if queue.isEmpty { break }
            }
            rr = (rr + 1) % max(1, slots.count)
        }
        for s in touched { s.connection?.flush() }
    }

    /// Apple refuses a token change on a connection within 20 minutes of the last one
    /// (429 TooManyProviderTokenUpdates): a connection keeps its token until then.
    static let minTokenSwitch = 20.0 * 60

    /// Writes a lower-case version-4 UUID (8-4-4-4-12) into `out` (36 bytes).
    static func formatUUID(_ out: inout [UInt8], _ high: UInt64, _ low: UInt64) {
        let a = (high & 0xffff_ffff_ffff_0fff) | 0x0000_0000_0000_4000
        let b = (low & 0x3fff_ffff_ffff_ffff) | 0x8000_0000_0000_0000
        out.withUnsafeMutableBufferPointer { p in
            let o = p.baseAddress!
            @inline(__always) func put(_ v: UInt64, _ nibbles: Int, at start: Int) {
                var x = v
                var i = start + nibbles - 1
                while i >= start {
                    let d = UInt8(truncatingIfNeeded: x & 0xf)
                    o[i] = d < 10 ? d &+ 48 : d &+ 87
                    x >>= 4
                    i -= 1
                }
            }
            put(a >> 32, 8, at: 0)
            o[8] = 45
            put((a >> 16) & 0xffff, 4, at: 9)
            o[13] = 45
            put(a & 0xffff, 4, at: 14)
            o[18] = 45
            put(b >> 48, 4, at: 19)
            o[23] = 45
            put(b & 0xffff_ffff_ffff, 12, at: 24)
        }
    }

    /// The `authorization` field of a slot's token, built once per token.
    func authorization(_ t: BearerToken, on s: Slot) -> HeaderList {
        if let cached = s.authorizationField, cached.generation == t.generation { return cached.field }
        var h = HeaderList()
        h.append("authorization", t.header)
        s.authorizationField = (t.generation, h)
        return h
    }

    func adopt(_ latest: BearerToken, on s: Slot) -> BearerToken {
        let now = jwt?.clock.now() ?? 0
        if let cur = s.bearer, cur.generation == latest.generation || now - s.bearerSince < Self.minTokenSwitch {
            return cur
        }
        s.bearer = latest
        s.bearerSince = now
        return latest
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
        waitingRetry += 1
        loop.schedule(after: delay) { [weak self] in
            guard let self else { return }
            self.waitingRetry -= 1
            if r.template.isCancelled {
                self.finish(r, .cancelled)
            } else {
                self.queue.prepend(r)
                self.dispatch()
            }
        }
    }

    private func closeAll() {
        for s in slots {
            s.reconnectTimer?.cancel()
            s.connection?.close()
        }
        for (_, c) in draining { c.close() }
        while let r = queue.popFirst() { finish(r, .cancelled) }
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
