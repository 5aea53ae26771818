import CPostgres
import Glibc

/// One `NOTIFY` delivered to this session.
public struct PostgresNotification: Sendable, Hashable {
    /// The channel it was sent on.
    public let channel: String
    /// Its payload (empty when none).
    public let payload: String
    /// The server process id of the session that sent it.
    public let senderPID: Int32
}

extension PostgresConnection {
    /// Starts receiving `NOTIFY`s on `channel` (kept across `reconnect`). Notifications sent
    /// while the session was down are lost: callers poll as a fallback.
    /// - Throws: `PostgresError`.
    /// - Thread: the connection's thread.
    public func listen(_ channel: String) throws(PostgresError) {
        try command("LISTEN \(Self.quoteIdentifier(channel))")
        listening.insert(channel)
    }

    /// Stops receiving `NOTIFY`s on `channel`.
    /// - Throws: `PostgresError`.
    /// - Thread: the connection's thread.
    public func unlisten(_ channel: String) throws(PostgresError) {
        try command("UNLISTEN \(Self.quoteIdentifier(channel))")
        listening.remove(channel)
    }

    /// Sends `payload` on `channel` (`pg_notify`); delivered when the transaction commits.
    /// - Throws: `PostgresError` (payloads are limited to 8000 bytes by the server).
    /// - Thread: the connection's thread.
    public func notify(_ channel: String, payload: String = "") throws(PostgresError) {
        try run("SELECT pg_notify($1, $2)", [.text(channel), .text(payload)])
    }

    /// The next notification: one already received, else waits on the session's socket
    /// (`poll`) until one arrives or `timeout` passes. Does not block past the deadline.
    /// - Returns: nil when the deadline passed first.
    /// - Throws: `.connection` when the session is lost while waiting.
    /// - Thread: the connection's thread.
    public func nextNotification(timeout: Duration) throws(PostgresError) -> PostgresNotification? {
        let conn = try self.conn()
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while true {
            guard PQconsumeInput(conn) == 1 else { throw PostgresError.connection(conn, target: target) }
            if let n = takeNotification(conn) { return n }
            let left = clock.now.duration(to: deadline)
            if left <= .zero { return nil }
            let (s, atto) = left.components
            let ms = Int32(clamping: s * 1000 + (atto + 999_999_999_999_999) / 1_000_000_000_000_000)
            var fd = pollfd(fd: PQsocket(conn), events: Int16(POLLIN), revents: 0)
            let ready = poll(&fd, 1, ms)
            if ready < 0, errno != EINTR {
                throw PostgresError(kind: .connection, message: "poll failed: errno \(errno)", target: target)
            }
        }
    }

    /// A notification libpq already parsed, freed after copying.
    private func takeNotification(_ conn: OpaquePointer) -> PostgresNotification? {
        guard let n = PQnotifies(conn) else { return nil }
        defer { PQfreemem(n) }
        return PostgresNotification(
            channel: String(cString: n.pointee.relname), payload: n.pointee.extra.map { String(cString: $0) } ?? "",
            senderPID: n.pointee.be_pid)
    }
}
