import CNghttp2
import CSystem
import Foundation
import Glibc
import HeraldCore

/// Limits of an HTTP/2 server connection.
public struct HTTP2ServerConfig: Sendable {
    /// SETTINGS_MAX_CONCURRENT_STREAMS advertised at the start of each connection.
    public var maxConcurrentStreams: UInt32 = 1000
    /// Seconds for the TLS handshake and the client preface.
    public var handshakeTimeout: Double = 10
    /// Request bodies are kept up to this size; the full size is still counted.
    public var maxRequestBody: Int = 64 * 1024
    /// Our receive window per stream and for the connection.
    public var windowSize: Int32 = 1 << 24

    public init() {}
}

/// A complete request received by an HTTP/2 server connection.
public struct HTTP2ServerRequest: Sendable {
    public var streamID: Int32
    public var method: String = ""
    public var path: String = ""
    public var scheme: String = ""
    public var authority: String = ""
    /// Regular header fields in arrival order (duplicates kept, so they can be detected).
    public var headers: [(name: String, value: String)] = []
    public var body: [UInt8] = []
    /// The body's full size (larger than `body.count` when truncated at the limit).
    public var bodySize = 0

    public init(streamID: Int32) { self.streamID = streamID }

    /// The first value of `name`.
    public func header(_ name: String) -> String? { headers.first { $0.name == name }?.value }

    /// How many times `name` occurs.
    public func count(of name: String) -> Int { headers.reduce(0) { $0 + ($1.name == name ? 1 : 0) } }
}

/// What an `HTTP2ServerConnection` reports, on its loop thread, outside nghttp2 callbacks.
public protocol HTTP2ServerDelegate: AnyObject {
    /// A request arrived; answer with `connection.respond` now or later (same loop).
    func http2Server(_ connection: HTTP2ServerConnection, received request: HTTP2ServerRequest)
    /// The connection ended.
    func http2ServerClosed(_ connection: HTTP2ServerConnection, error: NetError?)
}

/// The server side of one HTTP/2-over-TLS connection. Loop-confined.
public final class HTTP2ServerConnection: @unchecked Sendable {
    public let loop: EventLoop
    public let remoteAddress: String
    public let config: HTTP2ServerConfig
    public weak var delegate: HTTP2ServerDelegate?
    /// Per-connection state of the application (e.g. the JWT seen first).
    public var userInfo: AnyObject?
    public private(set) var closed = false
    /// Highest stream id handed to the delegate.
    public private(set) var lastProcessedStreamID: Int32 = 0
    /// After `goAway`, streams above this id are refused, not processed.
    public private(set) var goAwayLastStreamID: Int32?

    let transport: TLSTransport
    var session: OpaquePointer?
    var streams: [Int32: ServerStream] = [:]
    var events: [HTTP2ServerRequest] = []
    private var delivering = false

    final class ServerStream {
        var request: HTTP2ServerRequest
        var response: [UInt8] = []
        var offset = 0
        var responded = false
        init(id: Int32) { request = HTTP2ServerRequest(streamID: id) }
    }

    init(loop: EventLoop, stream: TLSStream, remoteAddress: String, config: HTTP2ServerConfig) {
        self.loop = loop
        self.remoteAddress = remoteAddress
        self.config = config
        transport = TLSTransport(loop: loop, stream: stream, requireH2: true)
        transport.delegate = self
    }

    deinit {
        if let session { nghttp2_session_del(session) }
    }

    func start() throws {
        try transport.start(handshakeTimeout: config.handshakeTimeout)
    }

    /// Streams open on this connection.
    public var openStreams: Int { streams.count }

    /// Sends the response for `streamID` (ignored if the stream is gone). Loop thread only.
    public func respond(streamID: Int32, status: Int, headers: HeaderList = HeaderList(), body: [UInt8] = []) {
        guard let session, let s = streams[streamID], !s.responded else { return }
        s.responded = true
        var pseudo = HeaderList()
        pseudo.append(":status", String(status))
        if !body.isEmpty { s.response = body }
        let rc: Int32 = headers.withNV(prefix: pseudo) { nva in
            if body.isEmpty {
                return nghttp2_submit_response(session, streamID, nva.baseAddress, nva.count, nil)
            }
            var provider = nghttp2_data_provider()
            provider.read_callback = serverReadBody
            return nghttp2_submit_response(session, streamID, nva.baseAddress, nva.count, &provider)
        }
        if rc != 0 { nghttp2_submit_rst_stream(session, 0, streamID, NGHTTP2_INTERNAL_ERROR.rawValue) }
        scheduleFlush()
    }

    /// Refuses a stream without processing it (RST_STREAM REFUSED_STREAM).
    public func refuse(streamID: Int32) {
        guard let session, let s = streams[streamID], !s.responded else { return }
        s.responded = true
        nghttp2_submit_rst_stream(session, 0, streamID, NGHTTP2_REFUSED_STREAM.rawValue)
        scheduleFlush()
    }

    /// Advertises a new SETTINGS_MAX_CONCURRENT_STREAMS (APNs lowers it, even to 1).
    public func updateMaxConcurrentStreams(_ n: UInt32) {
        guard let session else { return }
        var iv = [nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue), value: n)]
        nghttp2_submit_settings(session, 0, &iv, 1)
        scheduleFlush()
    }

    /// Sends GOAWAY with `debugData` (APNs puts `{"reason":…}` there, reference §1.3).
    /// Streams above `lastStreamID` (default: the last one processed) will be refused.
    /// The connection closes once the remaining streams finish.
    public func goAway(lastStreamID: Int32? = nil, errorCode: UInt32 = 0, debugData: [UInt8] = []) {
        guard let session, goAwayLastStreamID == nil else { return }
        let last = lastStreamID ?? lastProcessedStreamID
        goAwayLastStreamID = last
        _ = debugData.withUnsafeBufferPointer { p in
            nghttp2_submit_goaway(session, 0, last, errorCode, p.baseAddress, p.count)
        }
        for (id, s) in streams where id > last && !s.responded {
            s.responded = true
            nghttp2_submit_rst_stream(session, 0, id, NGHTTP2_REFUSED_STREAM.rawValue)
        }
        scheduleFlush()
    }

    /// Closes the connection now.
    public func close() {
        transport.close(error: nil)
    }

    /// Stops reading from the peer for `seconds` (a "slow reader" fault). Loop thread only.
    public func pauseReading(for seconds: Double) {
        transport.pauseReading(for: seconds)
    }

    private var flushScheduled = false
    /// Coalesces responses written in one loop turn into one TLS write.
    func scheduleFlush() {
        guard !flushScheduled else { return }
        flushScheduled = true
        loop.executeUnchecked { [weak self] in
            guard let self else { return }
            self.flushScheduled = false
            self.transport.flush()
        }
    }

    func requestComplete(_ streamID: Int32) {
        guard let s = streams[streamID] else { return }
        if let last = goAwayLastStreamID, streamID > last {
            refuse(streamID: streamID)
            return
        }
        if streamID > lastProcessedStreamID { lastProcessedStreamID = streamID }
        events.append(s.request)
    }

    private func deliver() {
        guard !delivering else { return }
        delivering = true
        defer { delivering = false }
        while !events.isEmpty {
            let batch = events
            events.removeAll(keepingCapacity: true)
            for r in batch {
                // A GOAWAY decided while handling an earlier request of this batch covers
                // the later ones too: they are refused, never processed.
                if let last = goAwayLastStreamID, r.streamID > last {
                    refuse(streamID: r.streamID)
                    continue
                }
                delegate?.http2Server(self, received: r)
            }
        }
    }
}

extension HTTP2ServerConnection: TLSTransportDelegate {
    func transportReady(_ t: TLSTransport) {
        var cbs: OpaquePointer?
        nghttp2_session_callbacks_new(&cbs)
        defer { nghttp2_session_callbacks_del(cbs) }
        nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, serverOnBeginHeaders)
        nghttp2_session_callbacks_set_on_header_callback(cbs, serverOnHeader)
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, serverOnData)
        nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, serverOnFrame)
        nghttp2_session_callbacks_set_on_stream_close_callback(cbs, serverOnStreamClose)
        var s: OpaquePointer?
        guard nghttp2_session_server_new(&s, cbs, Unmanaged.passUnretained(self).toOpaque()) == 0, let s else {
            t.close(error: .http2("session_server_new failed"))
            return
        }
        session = s
        var iv = [
            nghttp2_settings_entry(
                settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue), value: config.maxConcurrentStreams),
            nghttp2_settings_entry(
                settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), value: UInt32(config.windowSize)),
        ]
        nghttp2_submit_settings(s, 0, &iv, iv.count)
        nghttp2_session_set_local_window_size(s, 0, 0, config.windowSize)
    }

    func transportReceived(_ t: TLSTransport, _ bytes: UnsafeRawBufferPointer) -> NetError? {
        guard let session else { return .http2("no session") }
        let rc = nghttp2_session_mem_recv(session, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count)
        if rc < 0 { return .http2(String(cString: nghttp2_strerror(Int32(rc)))) }
        deliver()
        return nil
    }

    func transportProduce(_ t: TLSTransport, into out: inout ByteBuffer) -> NetError? {
        guard let session else { return nil }
        var p: UnsafePointer<UInt8>?
        let n = nghttp2_session_mem_send(session, &p)
        if n < 0 { return .http2(String(cString: nghttp2_strerror(Int32(n)))) }
        if n > 0, let p { out.append(UnsafeRawBufferPointer(start: p, count: n)) }
        if n == 0 && nghttp2_session_want_read(session) == 0 && nghttp2_session_want_write(session) == 0 {
            loop.executeUnchecked { [weak self] in self?.transport.closeAfterFlush() }
        }
        return nil
    }

    func transportClosed(_ t: TLSTransport, error: NetError?) {
        guard !closed else { return }
        closed = true
        streams.removeAll()
        if let session {
            nghttp2_session_del(session)
            self.session = nil
        }
        delegate?.http2ServerClosed(self, error: error)
    }
}

// MARK: - nghttp2 callbacks

@inline(__always)
private func server(_ ud: UnsafeMutableRawPointer?) -> HTTP2ServerConnection {
    Unmanaged<HTTP2ServerConnection>.fromOpaque(ud!).takeUnretainedValue()
}

private let serverOnBeginHeaders: nghttp2_on_begin_headers_callback = { _, frame, ud in
    guard let frame, frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue),
        frame.pointee.headers.cat == NGHTTP2_HCAT_REQUEST
    else { return 0 }
    let id = frame.pointee.hd.stream_id
    server(ud).streams[id] = HTTP2ServerConnection.ServerStream(id: id)
    return 0
}

private let serverOnHeader: nghttp2_on_header_callback = { _, frame, name, namelen, value, valuelen, _, ud in
    guard let frame, let name, let value, let s = server(ud).streams[frame.pointee.hd.stream_id] else { return 0 }
    let v = String(decoding: UnsafeBufferPointer(start: value, count: valuelen), as: UTF8.self)
    if namelen > 0 && name[0] == UInt8(ascii: ":") {
        let n = UnsafeBufferPointer(start: name, count: namelen)
        if n.elementsEqual(":path".utf8) {
            s.request.path = v
        } else if n.elementsEqual(":method".utf8) {
            s.request.method = v
        } else if n.elementsEqual(":scheme".utf8) {
            s.request.scheme = v
        } else if n.elementsEqual(":authority".utf8) {
            s.request.authority = v
        }
    } else if s.request.headers.count < 64 {
        s.request.headers.append((String(decoding: UnsafeBufferPointer(start: name, count: namelen), as: UTF8.self), v))
    }
    return 0
}

private let serverOnData: nghttp2_on_data_chunk_recv_callback = { _, _, streamID, data, len, ud in
    let c = server(ud)
    guard let s = c.streams[streamID], let data else { return 0 }
    s.request.bodySize += len
    let room = c.config.maxRequestBody - s.request.body.count
    if room > 0 { s.request.body.append(contentsOf: UnsafeBufferPointer(start: data, count: min(room, len))) }
    return 0
}

private let serverOnFrame: nghttp2_on_frame_recv_callback = { _, frame, ud in
    guard let frame else { return 0 }
    let type = UInt32(frame.pointee.hd.type)
    let endStream = frame.pointee.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
    if endStream && (type == NGHTTP2_HEADERS.rawValue || type == NGHTTP2_DATA.rawValue) {
        server(ud).requestComplete(frame.pointee.hd.stream_id)
    }
    return 0
}

private let serverOnStreamClose: nghttp2_on_stream_close_callback = { _, streamID, _, ud in
    server(ud).streams[streamID] = nil
    return 0
}

private let serverReadBody: nghttp2_data_source_read_callback = { _, streamID, buf, length, flags, _, ud in
    guard let s = server(ud).streams[streamID], let buf, let flags else {
        flags?.pointee |= UInt32(NGHTTP2_DATA_FLAG_EOF.rawValue)
        return 0
    }
    let n = min(length, s.response.count - s.offset)
    s.response.withUnsafeBufferPointer { src in buf.update(from: src.baseAddress! + s.offset, count: n) }
    s.offset += n
    if s.offset == s.response.count { flags.pointee |= UInt32(NGHTTP2_DATA_FLAG_EOF.rawValue) }
    return n
}
