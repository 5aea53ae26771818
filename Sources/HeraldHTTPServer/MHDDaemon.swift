import CMicroHTTPD
import Glibc

/// A running libmicrohttpd daemon. Owns the daemon handle and the option block the shim's
/// logger points into; `stop()` (or deinit) frees both. Used only under `HTTPServer`'s
/// state lock.
final class MHDDaemon {
    private var daemon: OpaquePointer?
    private let options: UnsafeMutablePointer<herald_mhd_config>
    /// Kept alive while the daemon runs: every callback's `cls` points to it.
    private let core: ServerCore

    /// Starts the worker threads on a duplicate of `socket`'s descriptor, which libmicrohttpd
    /// owns from then on; `socket` itself is closed once the daemon runs.
    init(core: ServerCore, config: HTTPServerConfig, socket: ListenSocket) throws(HTTPServerError) {
        self.core = core
        var flags =
            MHD_USE_INTERNAL_POLLING_THREAD.rawValue | MHD_USE_EPOLL.rawValue | MHD_USE_ITC.rawValue
            | MHD_USE_ERROR_LOG.rawValue
        if socket.address.family == .ipv6 { flags |= MHD_USE_IPv6.rawValue }
        // libmicrohttpd closes the descriptor it is given on some failure paths and not on
        // others; it gets a duplicate, so ours is closed exactly once whatever happens.
        let fd = fcntl(socket.fd, F_DUPFD_CLOEXEC, 0)
        guard fd >= 0 else { throw .socket(operation: "dup", errno: errno) }
        let cls = core.unmanaged
        options = .allocate(capacity: 1)
        options.initialize(
            to: herald_mhd_config(
                flags: flags, listen_fd: fd,
                accept_policy: mhdAcceptPolicy, accept_policy_cls: cls,
                access: mhdAccess, access_cls: cls,
                completed: mhdCompleted, completed_cls: cls,
                notify: mhdNotifyConnection, notify_cls: cls,
                uri_log: mhdURILog, uri_log_cls: cls,
                log: mhdLog, log_cls: cls,
                thread_pool_size: UInt32(config.threads),
                connection_limit: UInt32(Self.backstopLimit(config)),
                connection_timeout_s: UInt32(config.connectionTimeoutSeconds),
                per_ip_limit: 0,  // the accept policy enforces it (ConnectionBook), and counts refusals
                connection_memory_limit: config.connectionMemoryLimit))
        guard let d = herald_mhd_start(options) else {
            options.deallocate()
            throw .startFailed(message: core.lastLibraryMessage.withLock { $0 })
        }
        daemon = d
        socket.closeIfOwned()
    }

    deinit { stop() }

    /// libmicrohttpd's own connection limit, a backstop the accept policy keeps it from
    /// reaching: it splits its limit evenly over the workers and a full worker stops
    /// accepting (clients then wait in the listen queue, the lockout this server avoids), so
    /// each worker may hold every connection the book allows (`maxConnections` plus the
    /// reclaimed ones still closing).
    static func backstopLimit(_ config: HTTPServerConfig) -> Int {
        min((config.maxConnections + config.closingAllowance) * config.threads, Int(UInt32.max))
    }

    /// Closes every connection, joins the worker threads and frees the daemon. In-flight
    /// handlers finish first (the join waits for them) but their responses are not sent.
    func stop() {
        guard let d = daemon else { return }
        daemon = nil
        MHD_stop_daemon(d)
        options.deallocate()
    }
}
