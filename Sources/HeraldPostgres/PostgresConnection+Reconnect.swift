import CPostgres
import Glibc
import HeraldCore

extension PostgresConnection {
    /// Opens a new session in place of a lost one (`PQreset`), retrying with `backoff`
    /// until it succeeds or `within` has passed. The new session gets the session settings
    /// again and re-LISTENs; its prepared statements are prepared again on first use.
    ///
    /// Each attempt is bounded by `connect_timeout`; each failure is logged as
    /// `postgres.reconnect_failed` with the redacted target and the SQLSTATE, if any.
    /// - Throws: the last attempt's `PostgresError` (`.connection`) when `within` passed.
    /// - Thread: the connection's thread (blocks it while waiting).
    public func reconnect(backoff: ReconnectBackoff = ReconnectBackoff(), within: Duration) throws(PostgresError) {
        let conn = try self.conn()
        let clock = ContinuousClock()
        let deadline = clock.now + within
        var generator = SystemRandomNumberGenerator()
        var attempt = 0
        while true {
            attempt += 1
            dropStatementCache()
            PQreset(conn)
            var failure: PostgresError
            if PQstatus(conn) == CONNECTION_OK {
                herald_pq_quiet_notices(conn)
                do {
                    try configureSession()
                    for channel in listening.sorted() { try command("LISTEN \(Self.quoteIdentifier(channel))") }
                    log.info("postgres.reconnected", ["target": .string(target), "attempts": .int(Int64(attempt))])
                    return
                } catch {
                    failure = error
                }
            } else {
                let e = PostgresError.connection(conn, target: target)
                failure = PostgresError(
                    kind: .connection, sqlState: Self.sqlState(inConnectMessage: e.message),
                    message: PostgresConnectionString.mask(e.message, secretsOf: options.connection.text),
                    target: target)
            }
            let pause = backoff.delay(attempt, using: &generator)
            log.warning(
                "postgres.reconnect_failed",
                [
                    "target": .string(target), "attempt": .int(Int64(attempt)),
                    "sqlstate": failure.sqlState.map { .string($0.rawValue) } ?? .null,
                    "retry_in_ms": .int(Int64(pause.components.seconds * 1000 + pause.components.attoseconds / 1_000_000_000_000_000)),
                ])
            if clock.now + pause >= deadline { throw failure }
            sleep(for: pause)
        }
    }

    /// Reconnects only when the session is known to be lost (`isConnected` false).
    /// - Throws: as `reconnect(backoff:within:)`.
    public func ensureConnected(backoff: ReconnectBackoff = ReconnectBackoff(), within: Duration) throws(PostgresError) {
        if isConnected { return }
        try reconnect(backoff: backoff, within: within)
    }

    private func sleep(for d: Duration) {
        let (s, atto) = d.components
        var ts = timespec(tv_sec: Int(s), tv_nsec: Int(atto / 1_000_000_000))
        var left = timespec()
        while nanosleep(&ts, &left) == -1 && errno == EINTR { ts = left }
    }
}
