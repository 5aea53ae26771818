import CSystem
import Glibc
import Foundation
import HeraldCore

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
        try loop.register(fd: stream.fd, events: EPOLLIN.rawValue | EPOLLOUT.rawValue | EPOLLRDHUP.rawValue, handler: self)
        watchingWrite = true
        handshakeTimer = loop.schedule(after: handshakeTimeout) { [weak self] in
            self?.close(error: .timeout("TLS handshake"))
        }
        stepHandshake()
    }

    func handleEvents(_ events: UInt32) {
        guard !closed else { return }
        if !ready {
            stepHandshake()
            return
        }
        if events & (EPOLLIN.rawValue | EPOLLERR.rawValue | EPOLLHUP.rawValue | EPOLLRDHUP.rawValue) != 0 {
            readAvailable()
        }
        if !closed { flush() }
    }

    private func setWatchWrite(_ on: Bool) {
        guard on != watchingWrite, !closed else { return }
        watchingWrite = on
        loop.modify(fd: stream.fd, events: EPOLLIN.rawValue | EPOLLRDHUP.rawValue | (on ? EPOLLOUT.rawValue : 0))
    }

    private func stepHandshake() {
        switch stream.handshake() {
        case .done:
            handshakeTimer?.cancel()
            handshakeTimer = nil
            if requireH2 && stream.alpn != "h2" {
                close(error: .tls("the peer did not select ALPN h2 (got \(stream.alpn ?? "none"))"))
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

    /// Writes what is buffered (best effort), sends close_notify and closes. Idempotent.
    func close(error: NetError?) {
        guard !closed else { return }
        closed = true
        handshakeTimer?.cancel()
        loop.unregister(fd: stream.fd)
        if error == nil && ready && !out.isEmpty {
            _ = out.withReadable { stream.write($0) }
        }
        stream.close()
        delegate?.transportClosed(self, error: error)
    }
}
