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

/// What an `HTTP2ServerConnection` reports, on its loop thread, outside nghttp2 callbacks.
public protocol HTTP2ServerDelegate: AnyObject {
    /// A request arrived; answer with `connection.respond` now or later (same loop).
    func http2Server(_ connection: HTTP2ServerConnection, received request: HTTP2ServerRequest)
    /// The connection ended.
    func http2ServerClosed(_ connection: HTTP2ServerConnection, error: NetError?)
    /// Every request of one read (or write) was handed over, and the answers given so far
    /// are not written yet: a delegate that counts per connection publishes here, once per
    /// batch, and a peer that got an answer sees it counted.
    func http2ServerDelivered(_ connection: HTTP2ServerConnection)
}

extension HTTP2ServerDelegate {
    public func http2ServerDelivered(_ connection: HTTP2ServerConnection) {}
}

/// The server side of one HTTP/2-over-TLS connection: a thin shell between a
/// `TLSTransport` and an `HTTP2Session`, with the GOAWAY bookkeeping (which streams are
/// refused). Loop-confined.
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
    var session: HTTP2Session?
    var events: [HTTP2Event] = []
    private var spareEvents: [HTTP2Event] = []
    private var delivering = false

    init(loop: EventLoop, stream: TLSStream, remoteAddress: String, config: HTTP2ServerConfig) {
        self.loop = loop
        self.remoteAddress = remoteAddress
        self.config = config
        transport = TLSTransport(loop: loop, stream: stream, requireH2: true)
        transport.delegate = self
    }

    func start() throws {
        try transport.start(handshakeTimeout: config.handshakeTimeout)
    }

    /// Streams open on this connection.
    public var openStreams: Int { session?.openStreams ?? 0 }

    /// Sends the response for `streamID` (ignored if the stream is gone). Loop thread only.
    public func respond(streamID: Int32, status: Int, headers: HeaderList = HeaderList(), body: [UInt8] = []) {
        guard let session else { return }
        // A stream handed over and not answered yet (its flag, not a set per connection),
        // borrowed: submitting calls no nghttp2 callback, so the stream stays open meanwhile.
        let submitted = session.withStream(streamID) { s in
            guard s.unanswered else { return false }
            s.unanswered = false
            do {
                try session.submitResponse(s, status: status, headers: headers, body: body)
            } catch {
                // The stream is half-closed or nghttp2 refused the fields: reset rather than hang.
                try? session.submitReset(streamID: streamID, errorCode: HTTP2ErrorCode.internalError)
            }
            return true
        }
        if submitted == true { scheduleFlush() }
    }

    /// Refuses a stream without processing it (RST_STREAM REFUSED_STREAM).
    public func refuse(streamID: Int32) {
        guard let session, let s = session.stream(streamID), s.unanswered else { return }
        s.unanswered = false
        reset(session, streamID, HTTP2ErrorCode.refusedStream)
        scheduleFlush()
    }

    /// Advertises a new SETTINGS_MAX_CONCURRENT_STREAMS (APNs lowers it, even to 1).
    public func updateMaxConcurrentStreams(_ n: UInt32) {
        guard let session else { return }
        do {
            try session.submitSettings([.maxConcurrentStreams(n)])
        } catch {
            fail(error)
            return
        }
        scheduleFlush()
    }

    /// Sends GOAWAY with `debugData` (APNs puts `{"reason":…}` there, reference §1.3).
    /// Streams above `lastStreamID` (default: the last one processed) will be refused.
    /// The connection closes once the remaining streams finish.
    public func goAway(lastStreamID: Int32? = nil, errorCode: UInt32 = 0, debugData: [UInt8] = []) {
        guard let session, goAwayLastStreamID == nil else { return }
        let last = lastStreamID ?? lastProcessedStreamID
        goAwayLastStreamID = last
        do {
            try session.submitGoAway(lastStreamID: last, errorCode: errorCode, debugData: debugData)
        } catch {
            fail(error)
            return
        }
        for s in session.unansweredStreams(above: last) {
            s.unanswered = false
            reset(session, s.id, HTTP2ErrorCode.refusedStream)
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

    private func reset(_ session: HTTP2Session, _ id: Int32, _ code: UInt32) {
        // Fails only for a stream nghttp2 already closed: nothing left to reset.
        try? session.submitReset(streamID: id, errorCode: code)
    }

    private func fail(_ error: HTTP2Error) {
        transport.close(error: .http2(error))
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

    private func deliver() {
        guard !delivering, !events.isEmpty else { return }
        delivering = true
        defer { delivering = false }
        var batch: [HTTP2Event] = []
        swap(&batch, &spareEvents)
        // The (weak) delegate loaded once per batch, not per request.
        let delegate = self.delegate
        while !events.isEmpty {
            swap(&batch, &events)
            for e in batch { handle(e, delegate) }
            batch.removeAll(keepingCapacity: true)
        }
        swap(&batch, &spareEvents)
        delegate?.http2ServerDelivered(self)
    }

    private func handle(_ e: HTTP2Event, _ delegate: HTTP2ServerDelegate?) {
        switch e {
        case .request(let r):
            guard !closed else { return }
            // Nil when the peer already reset it: handed over all the same, its answer goes nowhere.
            _ = session?.withStream(r.streamID) { $0.unanswered = true }
            // A GOAWAY decided while handling an earlier request (of this read or before)
            // covers the later ones too: they are refused, never processed.
            if let last = goAwayLastStreamID, r.streamID > last {
                refuse(streamID: r.streamID)
                return
            }
            if r.streamID > lastProcessedStreamID { lastProcessedStreamID = r.streamID }
            delegate?.http2Server(self, received: r)
        case .streamClosed, .response, .settings, .goAway, .pingAcknowledged:
            break
        }
    }
}

extension HTTP2ServerConnection: TLSTransportDelegate {
    func transportReady(_ t: TLSTransport) {
        do {
            session = try HTTP2Session(
                role: .server,
                // No RFC 7540 priority tree: nghttp2 then keeps no dependency tree and no
                // closed streams (a per-stream cost the answers do not need).
                settings: [
                    .maxConcurrentStreams(config.maxConcurrentStreams), .initialWindowSize(UInt32(config.windowSize)),
                    .noRFC7540Priorities(true),
                ],
                connectionWindow: config.windowSize, maxBodyBytes: config.maxRequestBody)
        } catch {
            t.close(error: .http2(error))
        }
    }

    func transportReceived(_ t: TLSTransport, _ bytes: UnsafeRawBufferPointer) -> NetError? {
        guard let session else { return .closed("no HTTP/2 session") }
        do {
            try session.receive(bytes, into: &events)
        } catch {
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
            loop.executeUnchecked { [weak self] in self?.transport.closeAfterFlush() }
        }
        return nil
    }

    func transportClosed(_ t: TLSTransport, error: NetError?) {
        guard !closed else { return }
        closed = true
        events.removeAll()
        session = nil
        delegate?.http2ServerClosed(self, error: error)
    }
}
