import CSystem
import Glibc
import CNghttp2
import Foundation
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
    func http2(
        _ connection: HTTP2ClientConnection, completed context: AnyObject,
        result: Result<HTTP2Response, HTTP2StreamFailure>)
    /// The peer's SETTINGS changed (e.g. MAX_CONCURRENT_STREAMS, which APNs lowers to 1
    /// after errors and raises again, reference §1.3).
    func http2SettingsChanged(_ connection: HTTP2ClientConnection)
    /// The peer sent GOAWAY. Streams above `lastStreamID` are reported `.refused`.
    func http2GoAway(_ connection: HTTP2ClientConnection, lastStreamID: Int32, errorCode: UInt32, debugData: [UInt8])
    /// The connection is closed; every open stream was reported before this.
    func http2Closed(_ connection: HTTP2ClientConnection, error: NetError?)
}

/// One HTTP/2 client connection over TLS, driven by nghttp2 (sans I/O) and a
/// `TLSTransport`. Confined to its `EventLoop`: call every method on the loop thread.
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
    var session: OpaquePointer?
    var transport: TLSTransport?
    var connector: Connector?
    var streams: [Int32: ClientStream] = [:]
    var events: [Event] = []
    var delivering = false
    private var watchdog: LoopTimer?
    private var pingSentAt: UInt64?
    private var closeError: NetError?
    private let authority: String
    private let authorityBytes: [UInt8]
    private var nvScratch: [nghttp2_nv] = []

    enum Event {
        case ready
        case completed(AnyObject, Result<HTTP2Response, HTTP2StreamFailure>)
        case settings
        case goAway(Int32, UInt32, [UInt8])
    }

    final class ClientStream {
        let context: AnyObject
        let body: HTTP2Body?
        var offset = 0
        var status = 0
        var headers: [(String, String)] = []
        var responseBody: [UInt8] = []
        let started: UInt64
        var timedOut = false
        var keepHeaders = true

        init(context: AnyObject, body: HTTP2Body?, started: UInt64) {
            self.context = context
            self.body = body
            self.started = started
        }
    }

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
        authority = target.port == 443 ? target.host : target.description
        authorityBytes = Array(authority.utf8)
        Self.idLock.lock()
        Self.nextID += 1
        id = Self.nextID
        Self.idLock.unlock()
    }

    deinit {
        if let session { nghttp2_session_del(session) }
    }

    /// The peer's current SETTINGS_MAX_CONCURRENT_STREAMS (nghttp2 assumes 100 before the
    /// first SETTINGS frame arrives).
    public var peerMaxConcurrentStreams: Int {
        guard let session else { return 0 }
        return Int(nghttp2_session_get_remote_settings(session, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS))
    }

    /// Streams submitted and not yet ended.
    public var activeStreams: Int { streams.count }

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
                if case .success(let fd) = result { Glibc.close(fd) }
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
        } catch {
            finish(error: error as? NetError ?? .tls("\(error)"))
        }
    }

    /// Submits a request; nil when the connection cannot take it (not ready, going away,
    /// or nghttp2 refused). The stream's outcome reaches the delegate with `context`.
    /// Call `flush()` after a batch of submits so the frames leave in one write.
    @discardableResult
    /// `idField`: one more field whose value the caller wrote into a reused buffer (a fresh
    /// `apns-id`), valid for the call. `now`: the caller's Monotonic.nanos(), when it has one.
    public func submit(
        _ request: HTTP2Request, extra: HeaderList? = nil, idField: (name: StaticString, value: UnsafeBufferPointer<UInt8>)? = nil,
        now: UInt64? = nil, context: AnyObject
    ) -> Int32? {
        guard state == .ready, let session else { return nil }
        let stream = ClientStream(context: context, body: request.body, started: now ?? Monotonic.nanos())
        stream.keepHeaders = request.keepResponseHeaders
        var path = request.path
        var method = request.method
        let noExtra = HeaderList()
        let id: Int32 = path.withUTF8 { pathBytes in
            method.withUTF8 { methodBytes in
                authorityBytes.withUnsafeBufferPointer { auth in
                    request.headers.bytes.withUnsafeBufferPointer { h in
                        request.requestHeaders.bytes.withUnsafeBufferPointer { r in
                            (extra ?? noExtra).bytes.withUnsafeBufferPointer { e in
                                // nghttp2 copies names and values on submit: pointers need only
                                // live through this call. Built in a reused array.
                                nvScratch.removeAll(keepingCapacity: true)
                                Self.nv(&nvScratch, Self.pseudoMethod, methodBytes, noIndex: false)
                                Self.nv(&nvScratch, Self.pseudoScheme, Self.https, noIndex: false)
                                Self.nv(&nvScratch, Self.pseudoAuthority, auth, noIndex: false)
                                Self.nv(&nvScratch, Self.pseudoPath, pathBytes, noIndex: true)
                                Self.append(&nvScratch, request.headers.entries, h)
                                Self.append(&nvScratch, request.requestHeaders.entries, r)
                                if let extra { Self.append(&nvScratch, extra.entries, e) }
                                if let idField { Self.nv(&nvScratch, idField.name, idField.value, noIndex: true) }
                                return nvScratch.withUnsafeBufferPointer { nva in
                                    if request.body != nil {
                                        var provider = nghttp2_data_provider()
                                        provider.read_callback = clientReadBody
                                        return nghttp2_submit_request(session, nil, nva.baseAddress, nva.count, &provider, nil)
                                    }
                                    return nghttp2_submit_request(session, nil, nva.baseAddress, nva.count, nil, nil)
                                }
                            }
                        }
                    }
                }
            }
        }
        guard id > 0 else { return nil }
        streams[id] = stream
        streamsOpened += 1
        return id
    }

    static let pseudoMethod: StaticString = ":method"
    static let pseudoScheme: StaticString = ":scheme"
    static let pseudoAuthority: StaticString = ":authority"
    static let pseudoPath: StaticString = ":path"
    static let https: StaticString = "https"
    /// A valid pointer for zero-length values.
    nonisolated(unsafe) static let empty = UnsafeMutablePointer<UInt8>.allocate(capacity: 1)

    @inline(__always)
    static func nv(_ out: inout [nghttp2_nv], _ name: StaticString, _ value: UnsafeBufferPointer<UInt8>, noIndex: Bool) {
        out.append(
            nghttp2_nv(
                name: UnsafeMutablePointer(mutating: name.utf8Start), value: UnsafeMutablePointer(mutating: value.baseAddress ?? UnsafePointer(empty)),
                namelen: name.utf8CodeUnitCount, valuelen: value.count,
                flags: noIndex ? UInt8(NGHTTP2_NV_FLAG_NO_INDEX.rawValue) : UInt8(NGHTTP2_NV_FLAG_NONE.rawValue)))
    }

    @inline(__always)
    static func nv(_ out: inout [nghttp2_nv], _ name: StaticString, _ value: StaticString, noIndex: Bool) {
        nv(&out, name, UnsafeBufferPointer(start: value.utf8Start, count: value.utf8CodeUnitCount), noIndex: noIndex)
    }

    @inline(__always)
    static func append(_ out: inout [nghttp2_nv], _ entries: [HeaderList.Entry], _ bytes: UnsafeBufferPointer<UInt8>) {
        guard let base = bytes.baseAddress else { return }
        let p = UnsafeMutablePointer(mutating: base)
        for e in entries {
            out.append(
                nghttp2_nv(
                    name: p + Int(e.nameStart), value: e.valueLen == 0 ? empty : p + Int(e.valueStart), namelen: Int(e.nameLen),
                    valuelen: Int(e.valueLen),
                    flags: e.noIndex ? UInt8(NGHTTP2_NV_FLAG_NO_INDEX.rawValue) : UInt8(NGHTTP2_NV_FLAG_NONE.rawValue)))
        }
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
            if let session { nghttp2_session_terminate_session(session, 0) }
            flush()
            if streams.isEmpty { transport?.close(error: nil) }
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

    func deliver() {
        guard !delivering else { return }
        delivering = true
        defer { delivering = false }
        while !events.isEmpty {
            let batch = events
            events.removeAll(keepingCapacity: true)
            for e in batch {
                switch e {
                case .ready: delegate?.http2Ready(self)
                case .completed(let ctx, let r): delegate?.http2(self, completed: ctx, result: r)
                case .settings: delegate?.http2SettingsChanged(self)
                case .goAway(let last, let code, let data):
                    delegate?.http2GoAway(self, lastStreamID: last, errorCode: code, debugData: data)
                }
            }
        }
    }

    func streamClosed(_ id: Int32, errorCode: UInt32) {
        guard let s = streams.removeValue(forKey: id) else { return }
        let result: Result<HTTP2Response, HTTP2StreamFailure>
        if s.timedOut {
            result = .failure(.timedOut)
        } else if s.status != 0 && errorCode == 0 {
            result = .success(HTTP2Response(status: s.status, headers: s.headers, body: s.responseBody))
        } else if errorCode == NGHTTP2_REFUSED_STREAM.rawValue {
            result = .failure(.refused)
        } else {
            result = .failure(.reset(errorCode))
        }
        events.append(.completed(s.context, result))
        if state == .goingAway && streams.isEmpty {
            loop.executeUnchecked { [weak self] in self?.transport?.closeAfterFlush() }
        }
    }

    private func finish(error: NetError?) {
        guard state != .closed else { return }
        state = .closed
        watchdog?.cancel()
        let reason = error?.description ?? "connection closed"
        for (_, s) in streams.sorted(by: { $0.key < $1.key }) {
            events.append(.completed(s.context, .failure(s.timedOut ? .timedOut : .connectionLost(reason))))
        }
        streams.removeAll()
        deliver()
        if let session {
            nghttp2_session_del(session)
            self.session = nil
        }
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
        var reset = false
        for (id, s) in streams where !s.timedOut && now &- s.started > limit {
            s.timedOut = true
            nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), id, NGHTTP2_CANCEL.rawValue)
            reset = true
        }
        if let sent = pingSentAt {
            if now &- sent > UInt64(config.pingTimeout * 1e9) {
                abort(.timeout("PING not answered within \(config.pingTimeout)s"))
                return
            }
        } else if let t = transport, now &- t.lastActivity > UInt64(config.pingAfterIdle * 1e9) {
            pingSentAt = now
            nghttp2_submit_ping(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nil)
            reset = true
        }
        if reset { flush() }
    }

    func pingAcked() { pingSentAt = nil }
}

extension HTTP2ClientConnection: TLSTransportDelegate {
    func transportReady(_ t: TLSTransport) {
        var cbs: OpaquePointer?
        nghttp2_session_callbacks_new(&cbs)
        defer { nghttp2_session_callbacks_del(cbs) }
        nghttp2_session_callbacks_set_on_header_callback(cbs, clientOnHeader)
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, clientOnData)
        nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, clientOnFrame)
        nghttp2_session_callbacks_set_on_stream_close_callback(cbs, clientOnStreamClose)
        var s: OpaquePointer?
        let rc = nghttp2_session_client_new(&s, cbs, Unmanaged.passUnretained(self).toOpaque())
        guard rc == 0, let s else {
            t.close(error: .http2("session_client_new: \(rc)"))
            return
        }
        session = s
        var iv = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_ENABLE_PUSH.rawValue), value: 0),
            nghttp2_settings_entry(
                settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), value: UInt32(config.windowSize)),
        ]
        nghttp2_submit_settings(s, UInt8(NGHTTP2_FLAG_NONE.rawValue), &iv, iv.count)
        nghttp2_session_set_local_window_size(s, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, config.windowSize)
        state = .ready
        wasReady = true
        startWatchdog()
        events.append(.ready)
        deliver()
    }

    func transportReceived(_ t: TLSTransport, _ bytes: UnsafeRawBufferPointer) -> NetError? {
        guard let session else { return .http2("no session") }
        let rc = nghttp2_session_mem_recv(session, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count)
        deliver()
        if rc < 0 { return .http2(String(cString: nghttp2_strerror(Int32(rc)))) }
        return nil
    }

    func transportProduce(_ t: TLSTransport, into out: inout ByteBuffer) -> NetError? {
        guard let session else { return nil }
        var p: UnsafePointer<UInt8>?
        let n = nghttp2_session_mem_send(session, &p)
        if n < 0 { return .http2(String(cString: nghttp2_strerror(Int32(n)))) }
        if n > 0, let p { out.append(UnsafeRawBufferPointer(start: p, count: n)) }
        deliver()
        if n == 0 && nghttp2_session_want_read(session) == 0 && nghttp2_session_want_write(session) == 0 {
            // Both sides are done (GOAWAY exchanged, no streams): close cleanly.
            loop.executeUnchecked { [weak self] in self?.transport?.closeAfterFlush() }
        }
        return nil
    }

    func transportClosed(_ t: TLSTransport, error: NetError?) {
        finish(error: error)
    }
}

// MARK: - nghttp2 callbacks (recover the connection from user_data; never throw)

@inline(__always)
private func conn(_ ud: UnsafeMutableRawPointer?) -> HTTP2ClientConnection {
    Unmanaged<HTTP2ClientConnection>.fromOpaque(ud!).takeUnretainedValue()
}

private let clientOnHeader: nghttp2_on_header_callback = { _, frame, name, namelen, value, valuelen, _, ud in
    guard let frame, frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue) else { return 0 }
    let c = conn(ud)
    guard let s = c.streams[frame.pointee.hd.stream_id], let name, let value else { return 0 }
    let n = UnsafeBufferPointer(start: name, count: namelen)
    if namelen == 7 && n.elementsEqual(":status".utf8) {
        var status = 0
        for i in 0..<valuelen { status = status * 10 + Int(value[i] &- 48) }
        s.status = status
    } else if (s.keepHeaders || s.status >= 300 || s.status == 0) && s.headers.count < 32 {
        s.headers.append(
            (String(decoding: n, as: UTF8.self), String(decoding: UnsafeBufferPointer(start: value, count: valuelen), as: UTF8.self)))
    }
    return 0
}

private let clientOnData: nghttp2_on_data_chunk_recv_callback = { _, _, streamID, data, len, ud in
    let c = conn(ud)
    guard let s = c.streams[streamID], let data else { return 0 }
    let room = c.config.maxResponseBody - s.responseBody.count
    if room > 0 { s.responseBody.append(contentsOf: UnsafeBufferPointer(start: data, count: min(room, len))) }
    return 0
}

private let clientOnFrame: nghttp2_on_frame_recv_callback = { _, frame, ud in
    guard let frame else { return 0 }
    let c = conn(ud)
    switch UInt32(frame.pointee.hd.type) {
    case NGHTTP2_SETTINGS.rawValue:
        if frame.pointee.hd.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) == 0 { c.events.append(.settings) }
    case NGHTTP2_GOAWAY.rawValue:
        let g = frame.pointee.goaway
        var data: [UInt8] = []
        if let p = g.opaque_data, g.opaque_data_len > 0 { data = Array(UnsafeBufferPointer(start: p, count: g.opaque_data_len)) }
        if c.state == .ready { c.state = .goingAway }
        c.events.append(.goAway(g.last_stream_id, g.error_code, data))
    case NGHTTP2_PING.rawValue:
        if frame.pointee.hd.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) != 0 { c.pingAcked() }
    default:
        break
    }
    return 0
}

private let clientOnStreamClose: nghttp2_on_stream_close_callback = { _, streamID, errorCode, ud in
    conn(ud).streamClosed(streamID, errorCode: errorCode)
    return 0
}

/// Copies the next part of a request body; nghttp2 may offer less than the rest (flow
/// control), so the stream keeps an offset (interop notes §8).
private let clientReadBody: nghttp2_data_source_read_callback = { _, streamID, buf, length, flags, _, ud in
    let c = conn(ud)
    guard let s = c.streams[streamID], let body = s.body, let buf, let flags else {
        flags?.pointee |= UInt32(NGHTTP2_DATA_FLAG_EOF.rawValue)
        return 0
    }
    let n = min(length, body.count - s.offset)
    body.bytes.withUnsafeBufferPointer { src in
        buf.update(from: src.baseAddress! + s.offset, count: n)
    }
    s.offset += n
    if s.offset == body.count { flags.pointee |= UInt32(NGHTTP2_DATA_FLAG_EOF.rawValue) }
    return n
}
