import CPostgres

/// An error from PostgreSQL or libpq: what kind, the server's SQLSTATE and severity when it
/// sent one, its message, and the SQL or the (redacted) connection target it concerns.
///
/// Every libpq call in this module that can fail ends in `check(_:_:)` or
/// `PostgresError.connection(_:)`, the one choke point that turns libpq's state into this
/// error (style §3). Decide on `kind` and `sqlState`, never on `message`, which is for
/// people. A password never appears in it: connection strings carry none (see
/// `PostgresConnectionString`), and a target is always shown in its redacted form.
public struct PostgresError: Error, Sendable, CustomStringConvertible {
    /// What failed, coarsely.
    public enum Kind: Sendable, Hashable {
        /// The server rejected a statement (constraint, syntax, timeout, …): see `sqlState`.
        case server
        /// The session is gone or could not be opened (refused, closed by the server, timed
        /// out while connecting). Reconnect (`reconnect(policy:within:)`).
        case connection
        /// A result could not be decoded (a type this module does not read, a short value).
        case decoding
        /// The connection string or a setting is unusable (a password in the URL, …).
        case configuration
        /// This module's API was used wrongly (a wrong argument count, a bad parameter type).
        case misuse
    }

    public let kind: Kind
    /// The SQLSTATE the server sent (nil for errors libpq or this module made).
    public let sqlState: SQLState?
    /// The non-localized severity (`ERROR`, `FATAL`, `PANIC`) when the server sent one.
    public let severity: String?
    /// The primary message.
    public let message: String
    /// The server's DETAIL line, when it sent one.
    public let detail: String?
    /// The constraint that failed, when the server named one.
    public let constraint: String?
    /// The statement that failed, when there was one.
    public let sql: String?
    /// The connection target, redacted (`PostgresConnectionString.redacted`).
    public let target: String?

    public init(
        kind: Kind, sqlState: SQLState? = nil, severity: String? = nil, message: String, detail: String? = nil,
        constraint: String? = nil, sql: String? = nil, target: String? = nil
    ) {
        self.kind = kind
        self.sqlState = sqlState
        self.severity = severity
        self.message = message
        self.detail = detail
        self.constraint = constraint
        self.sql = sql
        self.target = target
    }

    /// True when the session is gone: reconnect before the next statement.
    public var isConnectionLoss: Bool { kind == .connection || sqlState?.isConnectionLoss == true }

    public var description: String {
        var s = "PostgreSQL"
        if let severity { s += " \(severity)" }
        if let sqlState { s += " \(sqlState)" }
        s += " (\(kind)): \(message)"
        if let detail { s += " — \(detail)" }
        if let sql { s += " — in: \(sql)" }
        if let target { s += " — on \(target)" }
        return s
    }
}

extension PostgresError {
    static func misuse(_ message: String, sql: String? = nil) -> PostgresError {
        PostgresError(kind: .misuse, message: message, sql: sql)
    }

    static func decoding(_ message: String, sql: String? = nil) -> PostgresError {
        PostgresError(kind: .decoding, message: message, sql: sql)
    }

    /// The connection's error (`PQerrorMessage`) as `.connection` when the session is gone,
    /// else as `.server`/`kind`: for calls that return no result (send, flush, consume).
    static func connection(_ conn: OpaquePointer, sql: String? = nil, target: String?, kind: Kind = .connection)
        -> PostgresError
    {
        let text = PQerrorMessage(conn).map { String(cString: $0) } ?? ""
        let bad = PQstatus(conn) == CONNECTION_BAD
        return PostgresError(
            kind: bad ? .connection : kind, message: Self.trimmed(text, or: "libpq reported no message"), sql: sql,
            target: target)
    }

    /// The error a failed result carries, its fields read by code (SQLSTATE, severity).
    init(result: OpaquePointer, conn: OpaquePointer, sql: String?, target: String?) {
        func field(_ code: Int32) -> String? {
            PQresultErrorField(result, code).map { String(cString: $0) }
        }
        let state = field(herald_pq_diag_sqlstate()).map(SQLState.init)
        let primary =
            field(herald_pq_diag_message())
            ?? Self.trimmed(PQresultErrorMessage(result).map { String(cString: $0) } ?? "", or: "no message")
        let gone = PQstatus(conn) == CONNECTION_BAD || state?.isConnectionLoss == true
        self.init(
            kind: gone ? .connection : .server, sqlState: state, severity: field(herald_pq_diag_severity()),
            message: primary, detail: field(herald_pq_diag_detail()), constraint: field(herald_pq_diag_constraint()),
            sql: sql, target: target)
    }

    static func trimmed(_ text: String, or fallback: String) -> String {
        let t = text.split(whereSeparator: \.isNewline).joined(separator: " ")
        return t.isEmpty ? fallback : t
    }
}

/// The one choke point for results: returns the owned result when its status is one of
/// `expected`, else throws the error it carries (or the connection's, when libpq returned
/// no result at all: out of memory or the session gone).
func check(
    _ result: OpaquePointer?, _ conn: OpaquePointer, expected: [ExecStatusType], sql: String?, target: String?
) throws(PostgresError) -> PostgresResult {
    guard let result else { throw PostgresError.connection(conn, sql: sql, target: target) }
    let owned = PostgresResult(result)
    let status = PQresultStatus(result)
    if expected.contains(status) { return owned }
    if status == PGRES_FATAL_ERROR || status == PGRES_NONFATAL_ERROR {
        throw PostgresError(result: result, conn: conn, sql: sql, target: target)
    }
    let name = PQresStatus(status).map { String(cString: $0) } ?? "\(status.rawValue)"
    throw PostgresError.misuse("unexpected result status \(name)", sql: sql)
}
