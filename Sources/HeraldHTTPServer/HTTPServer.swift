import Foundation
import HeraldCore

/// An HTTP/1.1 server on GNU libmicrohttpd that hands complete requests to one
/// `HTTPHandler`. It knows nothing of routes.
///
/// Lifecycle: `init` binds the socket (so `port` is known and address errors surface
/// early), `start()` starts the worker threads, `stop()` drains and frees everything. Every
/// method may be called from any thread except a handler's.
public final class HTTPServer: Sendable {
    /// The configuration this server runs with.
    public let config: HTTPServerConfig
    /// The port actually bound (the kernel's choice when `config.port` is 0).
    public let port: UInt16
    /// The bound address in numeric form (`127.0.0.1`, `::1`).
    public let boundAddress: String

    let core: ServerCore
    private let state: Locked<State>

    private enum State {
        case bound(ListenSocket)
        case running(MHDDaemon)
        case stopped
    }

    /// Validates `config` and binds its address.
    ///
    /// Throws `HTTPServerError`: `.invalidConfig`, `.invalidHost`, `.addressInUse`, or
    /// `.socket` for any other refusal by the kernel.
    public init(config: HTTPServerConfig, logger: Logger, handler: some HTTPHandler) throws(HTTPServerError) {
        try config.validate()
        let socket = try ListenSocket(host: config.host, port: config.port)
        self.config = config
        self.port = socket.port
        self.boundAddress = socket.address.host
        self.core = ServerCore(handler: handler, logger: logger, config: config)
        self.state = Locked(.bound(socket))
    }

    deinit { stop() }

    /// Starts serving. Calling it again while running does nothing.
    ///
    /// Throws `HTTPServerError.startFailed` when libmicrohttpd refuses to start (the message
    /// is its own), `.stopped` after `stop()`.
    public func start() throws(HTTPServerError) {
        try state.withLock { s throws(HTTPServerError) in
            switch s {
            case .running: return
            case .stopped: throw .stopped
            case .bound(let socket):
                let daemon = try MHDDaemon(core: core, config: config, socket: socket)
                s = .running(daemon)
                core.logger.info(
                    "http.listening",
                    [
                        "address": .string(boundAddress), "port": .int(Int64(port)),
                        "threads": .int(Int64(config.threads)),
                        "max_connections": .int(Int64(config.maxConnections)),
                        "max_connections_per_ip": .int(Int64(config.perIPConnectionLimit)),
                    ])
            }
        }
    }

    /// Stops the server: from the call on, new connections are closed as soon as they are
    /// accepted (unanswered); requests in flight finish and send their responses (each with
    /// `Connection: close`) for up to `config.shutdownGraceSeconds`; then every connection
    /// is closed, the worker threads are joined (a handler still running is waited for) and
    /// the listen socket is closed. Idempotent; a concurrent caller returns once the server
    /// is stopped. Must not be called from a handler (it would wait for its own thread).
    ///
    /// Why not `MHD_quiesce_daemon`, which would let the kernel refuse new connections: in
    /// libmicrohttpd 0.9.75 (and 0.9.77) it removes the listen socket from each worker's epoll
    /// set while the worker may be doing the same, and the loser calls MHD_PANIC (abort).
    public func stop() {
        state.withLock { s in
            switch s {
            case .stopped:
                return
            case .bound(let socket):
                socket.closeIfOwned()
            case .running(let daemon):
                core.draining.store(true, ordering: .relaxed)
                if Self.onLibraryThread() {
                    // Stopping from one of libmicrohttpd's own threads (the last reference
                    // dropped inside a handler): joining the workers from here would join
                    // this very thread — libmicrohttpd aborts the process. Stop from a
                    // thread of our own instead.
                    let d = UncheckedBox(daemon)
                    Thread.detachNewThread { d.value.stop() }
                    s = .stopped
                    return
                }
                let drained = core.inFlight.waitUntilIdle(seconds: config.shutdownGraceSeconds)
                let abandoned = core.inFlight.count
                if !drained {
                    core.logger.warning(
                        "http.drain_timeout",
                        ["port": .int(Int64(port)), "in_flight": .int(Int64(abandoned))])
                }
                daemon.stop()
                core.logger.info(
                    "http.stopped",
                    ["port": .int(Int64(port)), "drained": .bool(drained), "abandoned": .int(Int64(abandoned))])
            }
            s = .stopped
        }
    }

    /// True on a thread libmicrohttpd started (its workers name themselves "MHD-…").
    static func onLibraryThread() -> Bool {
        // pthread_getname_np needs _GNU_SOURCE, which Swift's Glibc module lacks.
        let name = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
        return name.hasPrefix("MHD")
    }

    /// True between `start()` and `stop()`.
    public var isRunning: Bool {
        state.withLock { if case .running = $0 { true } else { false } }
    }
}
