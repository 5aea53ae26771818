import CMicroHTTPD
import Glibc
import HeraldCore

/// The shell around `ConnectionBook`: libmicrohttpd's callbacks report here, on the worker
/// thread that owns the connection (the accept policy on the worker that accepted it),
/// and this carries out what the book decides.
extension ServerCore {
    /// The accept policy's answer for a connection from `address`, just accepted by the
    /// calling worker. A connection the book reclaims to make room is shut down here, under
    /// the book's lock: libmicrohttpd closes a connection's descriptor only after its
    /// CLOSED notification (daemon.c, `MHD_cleanup_connections`), which takes that lock to
    /// leave the book, so the descriptor shut down is still that connection's. Its worker
    /// then sees the hang-up and closes it (not the caller: the connection may be another
    /// worker's).
    func admit(_ address: UnsafePointer<sockaddr>?) -> Bool {
        if draining.load(ordering: .relaxed) { return false }
        let client = ClientAddress(address)
        let thread = WorkerThread.current
        let decision = book.withLock { b in
            let d = b.admit(client, on: thread, hasUnreadBytes: Self.hasUnreadBytes)
            if case .admit(let r?) = d { _ = shutdown(r.socket, Int32(SHUT_RDWR)) }
            return d
        }
        switch decision {
        case .admit(nil):
            return true
        case .admit(let r?):
            noteLimit(r.phase.rawValue, event: "http.connection_reclaimed", address, ["phase": .string(r.phase.rawValue)])
            return true
        case .refuse(let reason):
            noteLimit(reason.rawValue, event: "http.connection_refused", address, ["reason": .string(reason.rawValue)])
            return false
        }
    }

    /// True when `socket` has received bytes its worker has not read yet (a peek: nothing
    /// is consumed). Called under the book's lock, so the descriptor is still the
    /// connection's.
    static func hasUnreadBytes(_ socket: Int32) -> Bool {
        var byte: UInt8 = 0
        return recv(socket, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) > 0
    }

    /// MHD_CONNECTION_NOTIFY_STARTED, on the worker that admitted it.
    func connectionOpened(_ connection: OpaquePointer) {
        let client = ClientAddress(herald_mhd_client_address(connection))
        let fd = herald_mhd_connection_fd(connection)
        let thread = WorkerThread.current
        book.withLock { $0.opened(ConnectionID(connection), from: client, socket: fd, on: thread) }
    }

    /// MHD_CONNECTION_NOTIFY_CLOSED; the descriptor is closed after this returns.
    func connectionClosed(_ connection: OpaquePointer) {
        book.withLock { $0.closed(ConnectionID(connection)) }
    }

    /// The request line is read (URI-log callback). False when the connection is being
    /// reclaimed.
    @discardableResult
    func requestArrived(_ connection: OpaquePointer) -> Bool {
        book.withLock { $0.requestArrived(ConnectionID(connection)) }
    }

    /// Called before a handler runs or any response is queued. False when the connection is
    /// being reclaimed: then neither happens.
    func responding(_ connection: OpaquePointer) -> Bool {
        book.withLock { $0.responding(ConnectionID(connection)) }
    }

    /// The completion callback: true when the request ended because its connection was
    /// reclaimed (counted there, not as aborted or rejected).
    func requestEnded(_ connection: OpaquePointer, keepsOpen: Bool) -> Bool {
        book.withLock { $0.requestEnded(ConnectionID(connection), keepsOpen: keepsOpen) }
    }

    /// Every refusal and reclaim is logged at debug level; at warning level at most once
    /// per `LimitLog.interval` for each kind, with how many happened since the last such
    /// line (a flood must not flood the log too).
    private func noteLimit(
        _ kind: String, event: String, _ address: UnsafePointer<sockaddr>?, _ fields: [String: JSON]
    ) {
        var f = fields
        f["remote"] = .string(address.flatMap(ListenAddress.numericHost) ?? "")
        let now = ContinuousClock.now
        let summary = limitLog.withLock { $0.record(kind, at: now) }
        if let count = summary {
            let (limits, open, closing) = book.withLock { ($0.limits, $0.open, $0.closing) }
            f["count"] = .int(Int64(count))
            f["open"] = .int(Int64(open))
            f["closing"] = .int(Int64(closing))
            f["max_connections"] = .int(Int64(limits.maxConnections))
            f["max_connections_per_ip"] = .int(Int64(limits.perAddress))
            logger.warning(event, f)
        } else {
            logger.debug(event, f)
        }
    }
}

/// When each kind of limit event was last logged at warning level, and how many came since.
struct LimitLog {
    static let interval = Duration.seconds(10)
    private var last: [String: ContinuousClock.Instant] = [:]
    private var since: [String: Int] = [:]

    /// The number of events to report now (this one included), or nil to log it quietly.
    mutating func record(_ kind: String, at now: ContinuousClock.Instant) -> Int? {
        since[kind, default: 0] += 1
        if let l = last[kind], now - l < Self.interval { return nil }
        last[kind] = now
        defer { since[kind] = 0 }
        return since[kind]
    }
}

extension ConnectionID {
    init(_ connection: OpaquePointer) {
        raw = UInt(bitPattern: connection)
    }
}

extension WorkerThread {
    /// The calling thread.
    static var current: WorkerThread { WorkerThread(raw: UInt(pthread_self())) }
}
