import CPostgres
import Glibc
import HeraldCore

/// One PostgreSQL session through libpq: connects, prepares and caches statements, binds
/// parameters and reads results in binary.
///
/// **Not Sendable: use a connection from one thread at a time** (libpq's rule for a
/// `PGconn`). Every call blocks its thread until the server answers, bounded by the
/// statement timeout; keep it off the cooperative pool, as the SQLite connections are.
///
/// Closing: `close()` or `deinit` (`PQfinish`).
public final class PostgresConnection {
    /// The libpq handle; nil once closed.
    private(set) var handle: OpaquePointer?
    /// What this connection was opened with (reused by `reconnect`).
    public let options: PostgresOptions
    /// Prepared statements by SQL text (`prepared(_:)`).
    var cache: [String: PreparedStatement] = [:]
    /// Least recently used last: the order `cache` evicts in.
    var cacheOrder: [String] = []
    var nextStatementNumber = 0
    /// Channels this session LISTENs on, re-issued after a reconnect.
    var listening: Set<String> = []
    let log: Logger

    /// Opens a session and applies the session settings (statement timeout, UTF-8).
    /// - Throws: `PostgresError` `.connection` when the server cannot be reached or refuses
    ///   (its SQLSTATE when it sent one, e.g. 28P01), or `.server` from the settings.
    /// - Thread: any; the connection then belongs to one thread at a time.
    public init(_ options: PostgresOptions, log: Logger = .discard) throws(PostgresError) {
        self.options = options
        self.log = log
        let conn = try Self.open(options)
        handle = conn
        try configureSession()
    }

    deinit { close() }

    /// Ends the session (`PQfinish`). Idempotent.
    /// - Thread: the connection's thread.
    public func close() {
        guard let conn = handle else { return }
        handle = nil
        cache.removeAll()
        cacheOrder.removeAll()
        PQfinish(conn)
    }

    /// The connection target as errors and logs show it (no password).
    public var target: String { options.connection.redacted }

    /// True while the session is up as far as libpq knows (it learns of a loss on the
    /// next call that touches the socket).
    public var isConnected: Bool { handle.map { PQstatus($0) == CONNECTION_OK } ?? false }

    /// The server's process id for this session (`pg_backend_pid()`), 0 when closed.
    public var backendPID: Int32 { handle.map { PQbackendPID($0) } ?? 0 }

    /// True while a transaction block is open (or aborted and not yet rolled back).
    public var isInTransaction: Bool {
        guard let conn = handle else { return false }
        let s = PQtransactionStatus(conn)
        return s == PQTRANS_INTRANS || s == PQTRANS_INERROR || s == PQTRANS_ACTIVE
    }

    /// The open handle, or `.connection` once closed.
    @inline(__always)
    func conn() throws(PostgresError) -> OpaquePointer {
        guard let handle else { throw PostgresError(kind: .connection, message: "the connection is closed", target: target) }
        return handle
    }

    /// Opens a `PGconn` (blocking, bounded by `connect_timeout`); on failure frees it and
    /// throws its error.
    static func open(_ options: PostgresOptions) throws(PostgresError) -> OpaquePointer {
        // Later keywords win over earlier ones, and dbname (expanded: the whole URL or
        // key=value string) comes last, so a setting written in the string wins over ours.
        let keywords = ["connect_timeout", "fallback_application_name", "client_encoding", "dbname"]
        let values = [
            String(options.connectTimeoutSeconds), options.applicationName, "UTF8", options.connection.text,
        ]
        let conn = withCStrings(keywords) { k in withCStrings(values) { v in PQconnectdbParams(k, v, 1) } }
        guard let conn else {
            throw PostgresError(
                kind: .connection, message: "libpq could not allocate a connection",
                target: options.connection.redacted)
        }
        guard PQstatus(conn) == CONNECTION_OK else {
            let error = PostgresError.connection(conn, target: options.connection.redacted)
            PQfinish(conn)
            throw PostgresError(
                kind: .connection, sqlState: Self.sqlState(inConnectMessage: error.message),
                message: PostgresConnectionString.mask(error.message, secretsOf: options.connection.text),
                target: error.target)
        }
        herald_pq_quiet_notices(conn)
        return conn
    }

    /// The session settings every session gets (again after a reconnect).
    func configureSession() throws(PostgresError) {
        try command("SET statement_timeout = \(options.statementTimeoutMillis)")
    }

    /// libpq reports a failed connection as text only; the server's SQLSTATE is not kept.
    /// The few we decide on are recognised from libpq's fixed English phrases.
    static func sqlState(inConnectMessage message: String) -> SQLState? {
        if message.contains("password authentication failed") { return .invalidPassword }
        if message.contains("the database system is shutting down")
            || message.contains("the database system is starting up")
        {
            return SQLState("57P03")
        }
        return nil
    }
}

@available(*, unavailable, message: "a connection is confined to one thread at a time")
extension PostgresConnection: Sendable {}

/// Calls `body` with a NULL-terminated array of C strings that live for the call.
func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
    var owned: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) }
    owned.append(nil)
    defer { for p in owned { free(p) } }
    return owned.withUnsafeBufferPointer { buf in
        buf.baseAddress!.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: buf.count) { body($0) }
    }
}
