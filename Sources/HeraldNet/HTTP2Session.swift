import CNghttp2

/// One HTTP/2 connection's protocol state, client or server, around an `nghttp2_session`
/// (freed in `deinit`). It does no I/O: `receive` feeds it the peer's bytes and returns
/// what happened as `HTTP2Event`s; `produce` drains the frames to send, coalesced into one
/// buffer (one TLS write for many frames, interop notes §8). Every nghttp2 return code
/// passes through `check`, which throws `HTTP2Error`.
///
/// Confined to one thread (the connection's loop); not reentrant: never call it from
/// inside its own callbacks (they only record).
final class HTTP2Session {
    enum Role { case client, server }

    let role: Role
    /// Bodies received (request bodies on a server, response bodies on a client) are kept
    /// up to this size; a server still counts the full size.
    let maxBodyBytes: Int
    /// A server that checks requests itself (`HTTP2RequestCheck`), nghttp2's HTTP messaging off.
    let checksRequests: Bool
    /// A client that checks responses itself (`HTTP2ResponseCheck`), nghttp2's HTTP messaging off.
    let checksResponses: Bool
    let raw: OpaquePointer
    /// The session's nghttp2 memory (free lists: a push or a request allocates from them,
    /// not from malloc), client and server alike; nil with `HERALD_NGHTTP2_MALLOC` set.
    /// Freed after `raw`.
    let allocator: HTTP2Allocator?
    /// Open streams, keeping each `Stream` alive; nghttp2 holds an unretained pointer to it
    /// as the stream's user data, which is how the callbacks and `stream(_:)` find it. In
    /// no order: each stream knows its place (`slot`), so opening and retiring one is O(1)
    /// without hashing (a dictionary by id cost an insert and a removal per request).
    private(set) var streams: [Stream] = []
    /// Ended streams kept for reuse: a stream costs no allocation once the connection is warm.
    var spare: [Stream] = []
    /// Where the callbacks record events: during `receive`/`produce` this holds the
    /// caller's buffer (swapped in, so delivering costs no copy and no allocation).
    var sink: [HTTP2Event] = []
    /// Server: the stream whose request header block nghttp2 is decoding (set when it
    /// begins); client: the stream the header callback read the last field for. Either way
    /// the header callback finds it without a lookup in nghttp2's stream map per field;
    /// unretained, and cleared when that stream is retired.
    var headerStream: Unmanaged<Stream>?

    /// Per-stream state: the body we send and how much of it went (flow control may offer
    /// less than the rest, interop notes §8), and the message we receive.
    final class Stream {
        var id: HTTP2StreamID
        /// Its index in `streams` while open; -1 when not there.
        var slot = -1
        /// Client: the caller's tag (the pool's slot number), handed back with the stream's
        /// end (an integer, not an object: nothing to retain or cast back per answer), and
        /// when it began.
        var tag = 0
        var started: UInt64 = 0
        var body: HTTP2Body?
        var bodyBytes: [UInt8] = []
        var offset = 0
        // Client: the response.
        var status = 0
        var headers: [(String, String)] = []
        var responseBody: [UInt8] = []
        var keepHeaders = true
        // Server: the request, and whether it was handed to the application and not yet
        // answered or refused (what a GOAWAY refuses; a flag here, not a set per connection).
        var request: HTTP2ServerRequest
        var unanswered = false
        /// Server: RFC 9113 §8 as nghttp2 would check it (its HTTP messaging is off).
        var check = HTTP2RequestCheck()
        /// Client: the same for the response.
        var response = HTTP2ResponseCheck()

        init(id: HTTP2StreamID) {
            self.id = id
            request = HTTP2ServerRequest(streamID: id)
        }

        var sendCount: Int { body?.count ?? bodyBytes.count }

        /// Back to a fresh state for stream `id` (a reused object).
        func reset(id: HTTP2StreamID) {
            resetForRequest(id: id)
            request.reset(streamID: id)
            check = HTTP2RequestCheck()
        }

        var opaque: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }
    }

    /// A stream object for `id`: a spare one when there is one.
    func makeStream(_ id: HTTP2StreamID) -> Stream {
        guard let s = spare.popLast() else { return Stream(id: id) }
        s.reset(id: id)
        return s
    }

    /// The stream nghttp2 knows by `id` (its user data), without a dictionary lookup.
    @inline(__always)
    func stream(_ id: HTTP2StreamID) -> Stream? {
        guard let p = nghttp2_session_get_stream_user_data(raw, id) else { return nil }
        return Unmanaged<Stream>.fromOpaque(p).takeUnretainedValue()
    }

    /// Runs `body` with the stream nghttp2 knows by `id` (its user data, no dictionary
    /// lookup), borrowed as the callbacks borrow it: no retain and release (the session's
    /// `streams` keeps an open stream alive, and `body` must not retire it); nil when there
    /// is none.
    @inline(__always)
    func withStream<R>(_ id: HTTP2StreamID, _ body: (Stream) -> R) -> R? {
        HTTP2Callbacks.withStream(raw, id, body)
    }

    /// Tracks `s` as open (kept alive until `retire`).
    @inline(__always)
    func adopt(_ s: consuming Stream) {
        s.slot = streams.count
        streams.append(s)
    }

    /// A stream ended: forget it, keep the object for the next one. The spare list takes
    /// it before `streams` lets go (a caller may hold it only borrowed, as the callbacks
    /// do); with the spare list full it is freed here, so a caller that does not own a
    /// reference must not touch it after this.
    func retire(_ s: Stream) {
        if headerStream?.toOpaque() == s.opaque { headerStream = nil }
        s.unanswered = false
        s.body = nil
        if spare.count < 1024 { spare.append(s) }
        let i = s.slot
        guard i >= 0 else { return }
        s.slot = -1
        let last = streams.removeLast()
        if last !== s {
            last.slot = i
            streams[i] = last
        }
    }

    /// A session that first advertises `settings`, and opens its connection receive
    /// window to `connectionWindow` when given. Throws if nghttp2 refuses any of it.
    /// `nghttp2Checks` (tests only: the reference for `HTTP2RequestCheck` and
    /// `HTTP2ResponseCheck`) leaves a server's request checks, or a client's response
    /// checks, to nghttp2's HTTP messaging instead.
    init(
        role: Role, settings: [HTTP2Setting], connectionWindow: Int32?, maxBodyBytes: Int, nghttp2Checks: Bool = false
    ) throws(HTTP2Error) {
        self.role = role
        self.maxBodyBytes = maxBodyBytes
        checksRequests = role == .server && !nghttp2Checks
        checksResponses = role == .client && !nghttp2Checks
        var cbs: OpaquePointer?
        try Self.check(nghttp2_session_callbacks_new(&cbs), "nghttp2_session_callbacks_new")
        defer { nghttp2_session_callbacks_del(cbs) }
        HTTP2Callbacks.install(cbs, role: role)
        var s: OpaquePointer?
        // A server checks requests itself (`HTTP2RequestCheck`, in the header callback that
        // copies each field anyway), a client its responses (`HTTP2ResponseCheck`):
        // nghttp2's HTTP messaging checks are off.
        var option: OpaquePointer?
        if checksRequests || checksResponses {
            try Self.check(nghttp2_option_new(&option), "nghttp2_option_new")
            nghttp2_option_set_no_http_messaging(option, 1)
        }
        defer { if let option { nghttp2_option_del(option) } }
        switch role {
        case .client where HTTP2Allocator.enabled:
            let a = HTTP2Allocator()
            allocator = a
            var mem = a.mem
            try Self.check(nghttp2_session_client_new3(&s, cbs, nil, option, &mem), "nghttp2_session_client_new3")
        case .client:
            allocator = nil
            try Self.check(nghttp2_session_client_new2(&s, cbs, nil, option), "nghttp2_session_client_new2")
        case .server where HTTP2Allocator.enabled:
            // A request costs a server session about as many allocations as a push costs a
            // client (its stream, the header block's literals, the answer's fields).
            let a = HTTP2Allocator()
            allocator = a
            var mem = a.mem
            try Self.check(nghttp2_session_server_new3(&s, cbs, nil, option, &mem), "nghttp2_session_server_new3")
        case .server:
            allocator = nil
            try Self.check(nghttp2_session_server_new2(&s, cbs, nil, option), "nghttp2_session_server_new2")
        }
        raw = s!
        nghttp2_session_set_user_data(raw, Unmanaged.passUnretained(self).toOpaque())
        try submitSettings(settings)
        if let connectionWindow {
            try check(
                nghttp2_session_set_local_window_size(raw, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, connectionWindow),
                "nghttp2_session_set_local_window_size")
        }
    }

    deinit { nghttp2_session_del(raw) }

    /// Server: streams handed to the application and not answered yet, above `id`, in id order.
    func unansweredStreams(above id: HTTP2StreamID) -> [Stream] {
        streams.filter { $0.unanswered && $0.id > id }.sorted { $0.id < $1.id }
    }

    /// Open streams in id order with their tags (a connection failing them all).
    func openStreamTags() -> [(HTTP2StreamID, Int, UInt64)] {
        streams.sorted { $0.id < $1.id }.map { ($0.id, $0.tag, $0.started) }
    }

    // MARK: - the choke point

    /// Every nghttp2 return code goes through here: negative is an error.
    @inline(__always) @discardableResult
    static func check(_ rc: Int32, _ operation: StaticString) throws(HTTP2Error) -> Int32 {
        if rc < 0 { throw HTTP2Error(code: rc, operation: operation.description) }
        return rc
    }

    @inline(__always) @discardableResult
    static func check(_ rc: Int, _ operation: StaticString) throws(HTTP2Error) -> Int {
        if rc < 0 { throw HTTP2Error(code: Int32(truncatingIfNeeded: rc), operation: operation.description) }
        return rc
    }

    @inline(__always) @discardableResult
    func check(_ rc: Int32, _ operation: StaticString) throws(HTTP2Error) -> Int32 { try Self.check(rc, operation) }

    // MARK: - I/O, without the I/O

    /// Feeds the peer's bytes; appends what happened to `events` (the caller keeps one
    /// buffer per connection, so a read allocates no event array). Throws on a protocol
    /// violation nghttp2 cannot recover from (the connection must close).
    func receive(_ bytes: UnsafeRawBufferPointer, into events: inout [HTTP2Event]) throws(HTTP2Error) {
        swap(&events, &sink)
        defer { swap(&events, &sink) }
        let rc = nghttp2_session_mem_recv(raw, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count)
        try Self.check(rc, "nghttp2_session_mem_recv")
    }

    /// `receive` returning a fresh array (tests, cold paths).
    func receive(_ bytes: [UInt8]) throws(HTTP2Error) -> [HTTP2Event] {
        var events: [HTTP2Event] = []
        // A plain pointer, not `withUnsafeBytes`: a typed-throws closure through that
        // rethrowing API crashes Swift 6.3.1's IRGen.
        let p = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, bytes.count), alignment: 1)
        defer { p.deallocate() }
        p.copyBytes(from: bytes)
        try receive(UnsafeRawBufferPointer(rebasing: p[0..<bytes.count]), into: &events)
        return events
    }

    /// Appends frames to send to `out` until nghttp2 has none left or `limit` bytes were
    /// added; events of streams that closed while sending (our RST_STREAM, a response
    /// finished) go to `events`. Returns the bytes added.
    @discardableResult
    func produce(into out: inout ByteBuffer, events: inout [HTTP2Event], limit: Int = 1 << 16) throws(HTTP2Error) -> Int {
        swap(&events, &sink)
        defer { swap(&events, &sink) }
        var added = 0
        while added < limit {
            var p: UnsafePointer<UInt8>?
            let n = try Self.check(nghttp2_session_mem_send(raw, &p), "nghttp2_session_mem_send")
            guard n > 0, let p else { break }
            out.append(UnsafeRawBufferPointer(start: p, count: n))
            added += n
        }
        return added
    }

    /// `produce` returning the bytes and events (tests).
    func produce() throws(HTTP2Error) -> (bytes: [UInt8], events: [HTTP2Event]) {
        var out = ByteBuffer()
        var events: [HTTP2Event] = []
        while try produce(into: &out, events: &events) > 0 {}
        return (out.withReadable { Array($0) }, events)
    }

    // MARK: - state

    /// Both sides are done: GOAWAY exchanged (or terminated) and no stream left.
    var isFinished: Bool { nghttp2_session_want_read(raw) == 0 && nghttp2_session_want_write(raw) == 0 }

    /// The peer's SETTINGS_MAX_CONCURRENT_STREAMS (nghttp2 assumes 100 until its first
    /// SETTINGS frame arrives).
    var peerMaxConcurrentStreams: Int {
        Int(nghttp2_session_get_remote_settings(raw, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS))
    }

    /// The peer's SETTINGS_INITIAL_WINDOW_SIZE.
    var peerInitialWindowSize: Int {
        Int(nghttp2_session_get_remote_settings(raw, NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE))
    }

    /// Streams we track (submitted or received, not yet closed).
    var openStreams: Int { streams.count }
}
