import COpenSSL
import CSystem
import Foundation
import Glibc
import HeraldCore
import HeraldCrypto

/// What a `TLSTransport` reports to its owner. Called on the loop thread.
protocol TLSTransportDelegate: AnyObject {
    /// The handshake finished (ALPN already checked).
    func transportReady(_ t: TLSTransport)
    /// Bytes arrived. Return an error to close the connection.
    func transportReceived(_ t: TLSTransport, _ bytes: UnsafeRawBufferPointer) -> NetError?
    /// Append pending output to `out` (called until it adds nothing or `out` is large).
    /// Return an error to close the connection.
    func transportProduce(_ t: TLSTransport, into out: inout ByteBuffer) -> NetError?
    /// The connection is gone (nil: closed by us without error).
    func transportClosed(_ t: TLSTransport, error: NetError?)
}

/// Moves bytes between a TLS stream and a protocol engine on one event loop: reads until
/// the socket is dry, writes coalesced output, watches for writability only while output
/// is blocked. Loop-confined.
final class TLSTransport: FDHandler {
    let loop: EventLoop
    let stream: TLSStream
    weak var delegate: TLSTransportDelegate?
    private(set) var ready = false
    private(set) var closed = false
    private var out = ByteBuffer(capacity: 1 << 17)
    private var watchingWrite = false
    private var closeWhenFlushed = false
    private var lingering = false
    private var readPausedUntil: LoopTimer?
    private var lingerTimer: LoopTimer?
    private var handshakeTimer: LoopTimer?
    private let readBuffer: UnsafeMutableRawBufferPointer
    private let requireH2: Bool
    /// Bytes written and read, for metrics and tests.
    private(set) var bytesIn = 0
    private(set) var bytesOut = 0
    /// Monotonic time of the last byte read.
    private(set) var lastActivity = Monotonic.nanos()

    static let coalesceLimit = 1 << 16

    init(loop: EventLoop, stream: TLSStream, requireH2: Bool) {
        self.loop = loop
        self.stream = stream
        self.requireH2 = requireH2
        readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 16, alignment: 16)
    }

    deinit { readBuffer.deallocate() }

    /// Registers with the loop and starts the handshake, failing after `handshakeTimeout`.
    func start(handshakeTimeout: Double) throws {
        try loop.register(fd: stream.fd, interest: [.readable, .writable, .readHangup], handler: self)
        watchingWrite = true
        handshakeTimer = loop.schedule(after: handshakeTimeout) { [weak self] in
            self?.close(error: .timeout("TLS handshake"))
        }
        stepHandshake()
    }

    func handleEvents(_ events: IOEvents) {
        guard !closed else { return }
        if lingering {
            discardInput()
            return
        }
        if !ready {
            stepHandshake()
            return
        }
        if readPausedUntil == nil && !events.isDisjoint(with: [.readable, .error, .hangup, .readHangup]) {
            readAvailable()
        }
        if !closed { flush() }
    }

    private func setWatchWrite(_ on: Bool) {
        guard on != watchingWrite, !closed else { return }
        watchingWrite = on
        updateInterest()
    }

    private func updateInterest() {
        var interest: IOEvents = readPausedUntil == nil ? [.readable, .readHangup] : []
        if watchingWrite { interest.insert(.writable) }
        loop.modify(fd: stream.fd, interest: interest)
    }

    /// Stops reading for `seconds` (a slow peer, for fault injection): the peer's writes
    /// back up into its flow-control window and socket buffers.
    func pauseReading(for seconds: Double) {
        guard ready, !closed, readPausedUntil == nil else { return }
        readPausedUntil = loop.schedule(after: seconds) { [weak self] in
            guard let self, !self.closed else { return }
            self.readPausedUntil = nil
            self.updateInterest()
            self.readAvailable()
            if !self.closed { self.flush() }
        }
        updateInterest()
    }

    private func stepHandshake() {
        switch stream.handshake() {
        case .done:
            handshakeTimer?.cancel()
            handshakeTimer = nil
            if requireH2 && stream.alpn != "h2" {
                close(error: .tls(.alpn(selected: stream.alpn)))
                return
            }
            ready = true
            setWatchWrite(false)
            delegate?.transportReady(self)
            if !closed {
                readAvailable()
                if !closed { flush() }
            }
        case .wantRead: setWatchWrite(false)
        case .wantWrite: setWatchWrite(true)
        case .eof: close(error: .closed("during the TLS handshake"))
        case .failed(let m): close(error: .tls(m))
        }
    }

    private func readAvailable() {
        while !closed {
            switch stream.read(into: readBuffer) {
            case .done(let n):
                bytesIn += n
                lastActivity = Monotonic.nanos()
                if let err = delegate?.transportReceived(self, UnsafeRawBufferPointer(rebasing: readBuffer[0..<n])) {
                    close(error: err)
                    return
                }
            case .wantRead: return
            case .wantWrite:
                setWatchWrite(true)
                return
            case .eof:
                close(error: .closed("by the peer"))
                return
            case .failed(let m):
                close(error: .tls(m))
                return
            }
        }
    }

    /// Produces and writes as much as the socket takes. Call after submitting work.
    func flush() {
        guard ready, !closed else { return }
        while true {
            if out.isEmpty {
                while out.readableCount < Self.coalesceLimit {
                    let before = out.readableCount
                    if let err = delegate?.transportProduce(self, into: &out) {
                        close(error: err)
                        return
                    }
                    if out.readableCount == before { break }
                }
                if out.isEmpty {
                    setWatchWrite(false)
                    if closeWhenFlushed { linger() }
                    return
                }
            }
            let status = out.withReadable { stream.write($0) }
            switch status {
            case .done(let n):
                bytesOut += n
                out.consume(n)
            case .wantWrite, .wantRead:
                setWatchWrite(true)
                return
            case .eof:
                close(error: .closed("by the peer while writing"))
                return
            case .failed(let m):
                close(error: .tls(m))
                return
            }
        }
    }

    /// Closes once everything produced so far has been written (a graceful end: the peer
    /// gets every response before the connection goes).
    func closeAfterFlush() {
        guard !closed else { return }
        closeWhenFlushed = true
        flush()
    }

    /// Seconds a graceful close waits for the peer to close its side.
    static let lingerSeconds = 5.0

    /// A lingering close: send close_notify and FIN, then read and discard until the peer
    /// closes (or a deadline). Closing with unread data would make the kernel send RST,
    /// and a RST makes the peer drop what it has not read yet — our last responses and the
    /// GOAWAY that says which streams to resend.
    private func linger() {
        guard !lingering, !closed else { return }
        lingering = true
        OpenSSLError.clearQueue()
        _ = SSL_shutdown(stream.ssl)
        OpenSSLError.clearQueue()
        // Fails only if the peer is already gone: the lingering read then sees EOF.
        _ = try? Sys.call("shutdown(SHUT_WR)") { Glibc.shutdown(stream.fd, Int32(SHUT_WR)) }
        lingerTimer = loop.schedule(after: Self.lingerSeconds) { [weak self] in self?.close(error: nil) }
        discardInput()
    }

    private func discardInput() {
        while true {
            let n: Int?
            do {
                n = try Sys.nonBlocking("read") { Glibc.read(stream.fd, readBuffer.baseAddress, readBuffer.count) }
            } catch {
                n = 0
            }
            guard let n else { return }
            if n > 0 { continue }
            close(error: nil)
            return
        }
    }

    /// Writes what is buffered (best effort), sends close_notify and closes. Idempotent.
    func close(error: NetError?) {
        guard !closed else { return }
        closed = true
        handshakeTimer?.cancel()
        lingerTimer?.cancel()
        readPausedUntil?.cancel()
        loop.unregister(fd: stream.fd)
        if error == nil && ready && !out.isEmpty && !lingering {
            _ = out.withReadable { stream.write($0) }
        }
        stream.close(sendCloseNotify: !lingering)
        delegate?.transportClosed(self, error: error)
    }
}
