/// A PostgreSQL SQLSTATE: five characters, the first two its class (Appendix A of the
/// PostgreSQL manual). Decide on these, never on an error's message text.
public struct SQLState: Sendable, Hashable, CustomStringConvertible {
    /// The five characters, e.g. `"23505"`.
    public let rawValue: String

    public init(_ rawValue: String) { self.rawValue = rawValue }

    /// The class: the first two characters (`"23"` integrity constraint violation).
    public var errorClass: Substring { rawValue.prefix(2) }

    public var description: String { rawValue }

    /// 23505: a UNIQUE or PRIMARY KEY constraint failed.
    public static let uniqueViolation = SQLState("23505")
    /// 23503: a FOREIGN KEY constraint failed.
    public static let foreignKeyViolation = SQLState("23503")
    /// 23502: a NOT NULL column got NULL.
    public static let notNullViolation = SQLState("23502")
    /// 23514: a CHECK constraint failed.
    public static let checkViolation = SQLState("23514")
    /// 40001: a concurrent transaction made this one impossible to serialize; retry it.
    public static let serializationFailure = SQLState("40001")
    /// 40P01: this transaction was chosen as a deadlock victim; retry it.
    public static let deadlockDetected = SQLState("40P01")
    /// 42601: the SQL does not parse.
    public static let syntaxError = SQLState("42601")
    /// 42P01: no such table.
    public static let undefinedTable = SQLState("42P01")
    /// 57014: the statement was cancelled (`statement_timeout`, or a cancel request).
    public static let queryCanceled = SQLState("57014")
    /// 57P01: the server is shutting down (`pg_ctl stop -m fast`) and closed the session.
    public static let adminShutdown = SQLState("57P01")
    /// 25P02: a statement ran inside a transaction that an earlier error aborted.
    public static let inFailedTransaction = SQLState("25P02")
    /// 28P01: the password was wrong.
    public static let invalidPassword = SQLState("28P01")
    /// 55P03: a lock could not be taken (`NOWAIT`, `lock_timeout`).
    public static let lockNotAvailable = SQLState("55P03")

    /// 08P01: the server could not read what was sent (a binary value of the wrong length);
    /// the session stays usable.
    public static let protocolViolation = SQLState("08P01")

    /// Class 08 (connection exception, but not 08P01) or 57P0x (the server went away):
    /// the session is gone.
    public var isConnectionLoss: Bool {
        (errorClass == "08" && self != .protocolViolation) || rawValue == "57P01" || rawValue == "57P02"
            || rawValue == "57P03"
    }

    /// A failure that running the whole transaction again may cure (40001, 40P01).
    public var isRetryableTransaction: Bool { self == .serializationFailure || self == .deadlockDetected }
}
