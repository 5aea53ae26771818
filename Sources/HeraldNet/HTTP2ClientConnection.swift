import CNghttp2
import CSystem
import Foundation
import Glibc
import HeraldCore

/// Deadlines and limits of an HTTP/2 client connection.
public struct HTTP2ClientConfig: Sendable {
    /// Seconds to establish TCP (per address tried).
    public var connectTimeout: Double = 10
    /// Seconds for the TLS handshake.
    public var handshakeTimeout: Double = 10
    /// Seconds a stream may wait for its response before it is reset and reported `timedOut`.
    public var streamTimeout: Double = 30
    /// Send a PING after this long without traffic (Apple: after an hour idle, §1.3).
    public var pingAfterIdle: Double = 3600
    /// Close the connection when a PING is not answered within this many seconds.
    public var pingTimeout: Double = 10
    /// Response bodies beyond this are truncated (APNs sends small JSON).
    public var maxResponseBody: Int = 64 * 1024
    /// Our receive window per stream and for the connection.
    public var windowSize: Int32 = 1 << 24

    public init() {}
}

/// What an `HTTP2ClientConnection` reports. Called on the connection's loop thread, never
/// from inside an nghttp2 callback (events are queued and delivered afterwards), so the
/// delegate may submit, flush or close from these methods.
public protocol HTTP2ClientDelegate: AnyObject {
    /// TLS and the HTTP/2 preface are done; requests may be submitted.
    func http2Ready(_ connection: HTTP2ClientConnection)
    /// A stream ended: with a response, or a failure saying whether it was processed.
    /// `tag`: the caller's number for the request, as submitted.
    func http2(_ connection: HTTP2ClientConnection, completed tag: Int, result: consuming Result<HTTP2Response, HTTP2StreamFailure>)
    /// The peer's SETTINGS changed (e.g. MAX_CONCURRENT_STREAMS, which APNs lowers to 1
    /// after errors and raises again, reference §1.3).
    func http2SettingsChanged(_ connection: HTTP2ClientConnection)
    /// The peer sent GOAWAY. Streams above `lastStreamID` are reported `.refused`.
    func http2GoAway(_ connection: HTTP2ClientConnection, lastStreamID: Int32, errorCode: UInt32, debugData: [UInt8])
    /// The connection is closed; every open stream was reported before this.
    func http2Closed(_ connection: HTTP2ClientConnection, error: NetError?)
}

/// One HTTP/2 client connection over TLS: a thin shell that moves bytes between a
/// `TLSTransport` and an `HTTP2Session` (which holds every nghttp2 interaction), keeps each
/// stream's caller tag and deadline, and reports to its delegate. Confined to its
/// `EventLoop`: call every method on the loop thread.
public final class HTTP2ClientConnection: @unchecked Sendable {
    public enum State: Sendable { case idle, connecting, ready, goingAway, closed }

    public let loop: EventLoop
    public let target: HostPort
    public let serverName: String
    public let config: HTTP2ClientConfig
    public weak var delegate: HTTP2ClientDelegate?
    public internal(set) var state: State = .idle
    /// Per-connection identity for logs and metrics.
    public let id: Int
    /// Total streams opened on this connection.
    public private(set) var streamsOpened = 0
    /// True once the connection became ready (TLS and HTTP/2 preface done).
    public private(set) var wasReady = false

    let tls: TLSContext
    var session: HTTP2Session?
    var transport: TLSTransport?
    var connector: Connector?
    /// Streams this side reset for their deadline (rare): they end `.timedOut`.
    var timedOut: Set<Int32> = []
    /// Events of the session, reused for every read and write (no array per read).
    var events: [HTTP2Event] = []
    private var spareEvents: [HTTP2Event] = []
    private var delivering = false
    private var watchdog: LoopTimer?
    private var keepalive: HTTP2Keepalive
    /// `:authority`, allocated once per connection (freed in deinit).
    private let authority: UnsafeBufferPointer<UInt8>
    /// Where a request's UUID field is written (nghttp2 copies it on submit).
    private let uuidScratch = UnsafeMutablePointer<UInt8>.allocate(capacity: 36)

    nonisolated(unsafe) private static var nextID = 0
    private static let idLock = NSLock()

    /// A connection to `target`, verifying the certificate against `serverName` (defaults to
    /// the target host). Call `connect()` on the loop to start.
    public init(loop: EventLoop, target: HostPort, tls: TLSContext, serverName: String? = nil, config: HTTP2ClientConfig) {
        self.loop = loop
        self.target = target
        self.tls = tls
        self.serverName = serverName ?? target.host
        self.config = config
        keepalive = HTTP2Keepalive(pingAfterIdle: config.pingAfterIdle, pingTimeout: config.pingTimeout)
        let a = Array((target.port == 443 ? target.host : target.description).utf8)
        let p = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: max(1, a.count))
        _ = p.initialize(from: a)
        authority = UnsafeBufferPointer(rebasing: p[0..<a.count])
        Self.idLock.lock()
        Self.nextID += 1
        id = Self.nextID
        Self.idLock.unlock()
    }

    deinit {
        UnsafeMutableBufferPointer(mutating: authority).deallocate()
        uuidScratch.deallocate()
    }

    /// The peer's current SETTINGS_MAX_CONCURRENT_STREAMS (nghttp2 assumes 100 before the
    /// first SETTINGS frame arrives).
    public var peerMaxConcurrentStreams: Int { session?.peerMaxConcurrentStreams ?? 0 }

    /// Streams submitted and not yet ended.
    public var activeStreams: Int { session?.openStreams ?? 0 }

    /// Bytes written and read on this connection.
    public var bytesOut: Int { transport?.bytesOut ?? 0 }
    public var bytesIn: Int { transport?.bytesIn ?? 0 }

    /// Starts TCP, then TLS, then HTTP/2. Loop thread only.
    public func connect() {
        precondition(state == .idle)
        state = .connecting
        let c = Connector(loop: loop, target: target, timeout: config.connectTimeout)
        connector = c
        c.start { [weak self] result in
            guard let self else { return }
            self.connector = nil
            guard self.state == .connecting else {
                if case .success(let fd) = result { Sys.close(fd) }
                return
            }
            switch result {
            case .success(let fd): self.startTLS(fd)
            case .failure(let e): self.finish(error: e)
            }
        }
    }

    private func startTLS(_ fd: Int32) {
        do {
            let stream = try TLSStream(fd: fd, context: tls, serverName: serverName)
            let t = TLSTransport(loop: loop, stream: stream, requireH2: true)
            t.delegate = self
            transport = t
            try t.start(handshakeTimeout: config.handshakeTimeout)
        } catch let e as NetError {
            finish(error: e)
        } catch {
            finish(error: .closed("\(error)"))
        }
    }

    /// Submits a request; nil when the connection cannot take it (not ready, going away,
    /// or nghttp2 refused). The stream's outcome reaches the delegate with `tag` (the
    /// caller's own number for it, e.g. a slot in its table of requests in flight).
    /// Call `flush()` after a batch of submits so the frames leave in one write.
    /// `uuidField`: one more field with a fresh UUID (an `apns-id`), written into this
    /// connection's own buffer. `now`: the caller's Monotonic.nanos(), when it has one.
    @discardableResult
    public func submit(
        _ request: HTTP2Request, extra: HeaderList? = nil, uuidField: HTTP2UUIDField? = nil, now: UInt64? = nil, tag: Int
    ) -> Int32? {
        submit(
            method: request.method, path: Array(request.path.utf8), headers: request.headers,
            requestHeaders: request.requestHeaders, body: request.body, keepResponseHeaders: request.keepResponseHeaders,
            extra: extra, uuidField: uuidField, now: now, tag: tag)
    }

    /// `submit` from a request's parts, borrowed: a sender that keeps them in its own
    /// objects (the APNs pool) builds no `HTTP2Request` value per request. `path`: the
    /// `:path`'s bytes (a buffer the sender reuses).
    @discardableResult
    public func submit(
        method: String, path: [UInt8], headers: HeaderList, requestHeaders: HeaderList, body: HTTP2Body?,
        keepResponseHeaders: Bool, extra: HeaderList? = nil, uuidField: HTTP2UUIDField? = nil, now: UInt64? = nil, tag: Int
    ) -> Int32? {
        guard state == .ready, self.session != nil else { return nil }
        // Borrowed for the call (nothing in a submit can end the session): no retain per push.
        unowned(unsafe) let session = self.session!
        let id: Int32
        do {
            var idField: (name: StaticString, value: UnsafeBufferPointer<UInt8>)?
            if let uuidField {
                uuidField.write(to: uuidScratch)
                idField = (uuidField.name, UnsafeBufferPointer(start: UnsafePointer(uuidScratch), count: 36))
            }
            id = try session.submitRequest(
                method: method, path: path, headers: headers, requestHeaders: requestHeaders, body: body,
                keepResponseHeaders: keepResponseHeaders, authority: authority, extra: extra, idField: idField, tag: tag,
                started: now ?? Monotonic.nanos())
        } catch {
            return nil
        }
        streamsOpened += 1
        return id
    }

    /// Writes everything submitted so far. Loop thread only.
    public func flush() {
        transport?.flush()
    }

    /// Sends GOAWAY and closes once open streams finish. Loop thread only.
    public func close() {
        switch state {
        case .idle, .connecting:
            finish(error: nil)
        case .ready, .goingAway:
            state = .goingAway
            do {
                try session?.terminate()
            } catch {
                abort(.http2(error))
                return
            }
            flush()
            if activeStreams == 0 { transport?.close(error: nil) }
        case .closed:
            break
        }
    }

    /// Closes at once; open streams are reported `.connectionLost`. Loop thread only.
    public func abort(_ error: NetError) {
        if let transport, !transport.closed {
            transport.close(error: error)
        } else {
            finish(error: error)
        }
    }

    // MARK: - internals

    /// Hands the session's events to the delegate, in order, outside nghttp2. A delegate
    /// that submits and flushes from here records new events, handled after this batch.
    func deliver() {
        guard !delivering, !events.isEmpty else { return }
        delivering = true
        defer { delivering = false }
        // Loaded once per batch, not per event: a weak load costs atomics on the side table.
        let d = delegate
        var batch: [HTTP2Event] = []
        swap(&batch, &spareEvents)
        while !events.isEmpty {
            swap(&batch, &events)
            // Each event moved out, not copied: a copy retained its response's arrays and
            // context, released again when the batch was emptied (issue #12). Its place
            // holds a case without payload until the batch is emptied.
            batch.withUnsafeMutableBufferPointer { p in
                guard let base = p.baseAddress else { return }
                for i in 0..<p.count {
                    let e = (base + i).move()
                    (base + i).initialize(to: .pingAcknowledged)
                    handle(e, d)
                }
            }
            batch.removeAll(keepingCapacity: true)
        }
        swap(&batch, &spareEvents)
    }

    private func handle(_ e: consuming HTTP2Event, _ d: HTTP2ClientDelegate?) {
        switch consume e {
        case .response(let id, let response, let tag):
            let late = !timedOut.isEmpty && timedOut.remove(id) != nil
            streamEnded(tag, late ? .failure(.timedOut) : .success(response), d)
        case .streamClosed(let id, let code, let tag):
            let late = !timedOut.isEmpty && timedOut.remove(id) != nil
            let failure: HTTP2StreamFailure = late ? .timedOut : code == HTTP2ErrorCode.refusedStream ? .refused : .reset(code)
            streamEnded(tag, .failure(failure), d)
        case .settings:
            d?.http2SettingsChanged(self)
        case .goAway(let last, let code, let data):
            if state == .ready { state = .goingAway }
            d?.http2GoAway(self, lastStreamID: last, errorCode: code, debugData: data)
        case .pingAcknowledged:
            keepalive.acknowledged()
        case .request:
            break
        }
    }

    private func streamEnded(_ tag: Int, _ result: consuming Result<HTTP2Response, HTTP2StreamFailure>, _ d: HTTP2ClientDelegate?) {
        d?.http2(self, completed: tag, result: result)
        if state == .goingAway && activeStreams == 0 {
            loop.executeUnchecked { [weak self] in self?.transport?.closeAfterFlush() }
        }
    }

    private func finish(error: NetError?) {
        guard state != .closed else { return }
        state = .closed
        watchdog?.cancel()
        deliver()
        let reason = error?.description ?? "connection closed"
        let open = session?.openStreamTags() ?? []
        session = nil
        for (id, tag, _) in open {
            delegate?.http2(self, completed: tag, result: .failure(timedOut.contains(id) ? .timedOut : .connectionLost(reason)))
        }
        timedOut.removeAll()
        transport = nil
        delegate?.http2Closed(self, error: error)
    }

    private func startWatchdog() {
        watchdog = loop.schedule(after: 1) { [weak self] in
            guard let self, self.state == .ready || self.state == .goingAway else { return }
            self.checkDeadlines()
            self.startWatchdog()
        }
    }

    private func checkDeadlines() {
        guard let session else { return }
        let now = Monotonic.nanos()
        let limit = UInt64(config.streamTimeout * 1e9)
        var wrote = false
        do throws(HTTP2Error) {
            for s in session.streams where now &- s.started > limit && !timedOut.contains(s.id) {
                timedOut.insert(s.id)
                try session.submitReset(streamID: s.id, errorCode: HTTP2ErrorCode.cancel)
                wrote = true
            }
            switch keepalive.tick(now: now, lastActivity: transport?.lastActivity ?? now) {
            case .nothing: break
            case .ping:
                try session.submitPing()
                wrote = true
            case .dead:
                abort(.timeout("PING not answered within \(config.pingTimeout)s"))
                return
            }
        } catch {
            abort(.http2(error))
            return
        }
        if wrote { flush() }
    }
}

extension HTTP2ClientConnection: TLSTransportDelegate {
    func transportReady(_ t: TLSTransport) {
        do {
            session = try HTTP2Session(
                role: .client,
                settings: [.enablePush(false), .initialWindowSize(UInt32(config.windowSize))],
                connectionWindow: config.windowSize, maxBodyBytes: config.maxResponseBody)
        } catch {
            t.close(error: .http2(error))
            return
        }
        state = .ready
        wasReady = true
        startWatchdog()
        delegate?.http2Ready(self)
    }

    func transportReceived(_ t: TLSTransport, _ bytes: UnsafeRawBufferPointer) -> NetError? {
        guard let session else { return .closed("no HTTP/2 session") }
        do {
            try session.receive(bytes, into: &events)
        } catch {
            deliver()
            return .http2(error)
        }
        deliver()
        return nil
    }

    func transportProduce(_ t: TLSTransport, into out: inout ByteBuffer) -> NetError? {
        guard let session else { return nil }
        let n: Int
        do {
            n = try session.produce(into: &out, events: &events)
        } catch {
            return .http2(error)
        }
        deliver()
        if n == 0 && self.session?.isFinished == true {
            // Both sides are done (GOAWAY exchanged, no streams): close cleanly.
            loop.executeUnchecked { [weak self] in self?.transport?.closeAfterFlush() }
        }
        return nil
    }

    func transportClosed(_ t: TLSTransport, error: NetError?) {
        finish(error: error)
    }
}
