import CSystem
import Foundation
import Glibc
import HeraldCore

/// Accepts TLS connections on one address and spreads them over a set of event loops
/// (round robin). Each accepted connection gets `delegate`.
public final class HTTP2Listener: @unchecked Sendable {
    public let loops: [EventLoop]
    public let tls: TLSContext
    public let config: HTTP2ServerConfig
    /// The bound address (the real port when 0 was asked for).
    public let address: SocketAddress
    private let fd: Int32
    private let acceptor: Acceptor
    private let logger: Logger

    /// Binds `host:port` now (throws `NetError` if it can't), accepting starts at `start()`.
    /// `delegate` must be usable from every loop (it is called on the connection's loop).
    public init(
        host: String, port: Int, loops: [EventLoop], tls: TLSContext, config: HTTP2ServerConfig, logger: Logger,
        delegate: @escaping @Sendable () -> HTTP2ServerDelegate
    ) throws {
        precondition(!loops.isEmpty)
        self.loops = loops
        self.tls = tls
        self.config = config
        self.logger = logger
        let (fd, addr) = try Socket.listen(host: host, port: port)
        self.fd = fd
        address = addr
        acceptor = Acceptor(fd: fd, loops: loops, tls: tls, config: config, logger: logger, delegate: delegate)
    }

    /// Starts accepting.
    public func start() {
        let a = UncheckedBox(acceptor)
        loops[0].execute {
            do {
                try a.value.loops[0].register(fd: a.value.fd, interest: .readable, handler: a.value)
            } catch {
                a.value.logger.error("http2.listen_failed", ["error": .string("\(error)")])
            }
        }
    }

    /// Stops accepting and closes the listening socket (open connections stay).
    public func stop() {
        let a = UncheckedBox(acceptor)
        let done = DispatchSemaphore(value: 0)
        loops[0].execute {
            a.value.stop()
            done.signal()
        }
        done.wait()
    }

    /// Closes every open connection (the simulator's "restart").
    public func closeAllConnections() {
        acceptor.closeAll()
    }
}

/// Loop-confined accept handler. `connections` is guarded by `lock` because each
/// connection lives on its own loop.
final class Acceptor: FDHandler, @unchecked Sendable {
    let fd: Int32
    let loops: [EventLoop]
    let tls: TLSContext
    let config: HTTP2ServerConfig
    let logger: Logger
    let delegate: @Sendable () -> HTTP2ServerDelegate
    private var next = 0
    private var stopped = false
    private let lock = NSLock()
    private var connections: [ObjectIdentifier: UncheckedBox<HTTP2ServerConnection>] = [:]

    init(
        fd: Int32, loops: [EventLoop], tls: TLSContext, config: HTTP2ServerConfig, logger: Logger,
        delegate: @escaping @Sendable () -> HTTP2ServerDelegate
    ) {
        self.fd = fd
        self.loops = loops
        self.tls = tls
        self.config = config
        self.logger = logger
        self.delegate = delegate
    }

    func stop() {
        guard !stopped else { return }
        stopped = true
        loops[0].unregister(fd: fd)
        Sys.close(fd)
    }

    func handleEvents(_ events: IOEvents) {
        while !stopped {
            let accepted: (Int32, SocketAddress?)?
            do {
                accepted = try Socket.accept(fd)
            } catch {
                logger.warning("http2.accept_failed", ["error": .string("\(error)")])
                return
            }
            guard let (cfd, peer) = accepted else { return }
            let loop = loops[next % loops.count]
            next &+= 1
            let me = UncheckedBox(self)
            loop.execute { me.value.adopt(cfd, peer: peer?.description ?? "?", loop: loop) }
        }
    }

    private func adopt(_ cfd: Int32, peer: String, loop: EventLoop) {
        do {
            let stream = try TLSStream(fd: cfd, context: tls, serverName: nil)
            let c = HTTP2ServerConnection(loop: loop, stream: stream, remoteAddress: peer, config: config)
            let d = ConnectionTracker(inner: delegate(), acceptor: self)
            c.delegate = d
            c.userInfo = nil
            track(c, tracker: d)
            try c.start()
        } catch {
            logger.warning("http2.accept_tls_failed", ["error": .string("\(error)")])
        }
    }

    private func track(_ c: HTTP2ServerConnection, tracker: ConnectionTracker) {
        lock.lock()
        connections[ObjectIdentifier(c)] = UncheckedBox(c)
        trackers[ObjectIdentifier(c)] = tracker
        lock.unlock()
    }

    private var trackers: [ObjectIdentifier: ConnectionTracker] = [:]

    func forget(_ c: HTTP2ServerConnection) {
        lock.lock()
        connections[ObjectIdentifier(c)] = nil
        trackers[ObjectIdentifier(c)] = nil
        lock.unlock()
    }

    func closeAll() {
        lock.lock()
        let all = Array(connections.values)
        lock.unlock()
        for box in all {
            let done = DispatchSemaphore(value: 0)
            box.value.loop.execute {
                box.value.close()
                done.signal()
            }
            done.wait()
        }
    }
}

/// Keeps each connection alive while it is open and forwards to the app's delegate.
final class ConnectionTracker: HTTP2ServerDelegate {
    let inner: HTTP2ServerDelegate
    weak var acceptor: Acceptor?

    init(inner: HTTP2ServerDelegate, acceptor: Acceptor) {
        self.inner = inner
        self.acceptor = acceptor
    }

    func http2Server(_ connection: HTTP2ServerConnection, received request: HTTP2ServerRequest) {
        inner.http2Server(connection, received: request)
    }

    func http2ServerDelivered(_ connection: HTTP2ServerConnection) {
        inner.http2ServerDelivered(connection)
    }

    func http2ServerClosed(_ connection: HTTP2ServerConnection, error: NetError?) {
        inner.http2ServerClosed(connection, error: error)
        acceptor?.forget(connection)
    }
}
