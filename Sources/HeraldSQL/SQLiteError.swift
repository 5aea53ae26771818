import CSQLite

/// An error reported by SQLite: its result code, its message and the SQL that failed.
///
/// Every SQLite call in this module goes through `check(_:_:_:)`, the one place that turns
/// a result code into this error (style §3). Decide on `code`/`extendedCode` or the `is…`
/// properties, never on `message`, which is for people.
public struct SQLiteError: Error, Sendable, CustomStringConvertible {
    /// The primary result code (`SQLITE_FULL`, `SQLITE_CONSTRAINT`, …): the low byte of
    /// `extendedCode`.
    public let code: Int32
    /// The extended result code (`SQLITE_CONSTRAINT_UNIQUE`, `SQLITE_IOERR_FSYNC`, …).
    public let extendedCode: Int32
    /// SQLite's message (`sqlite3_errmsg`), or the generic text for the code.
    public let message: String
    /// The statement that failed, when there was one.
    public let sql: String?

    /// Makes an error from an extended (or primary) result code.
    public init(extendedCode: Int32, message: String, sql: String? = nil) {
        self.code = extendedCode & 0xff
        self.extendedCode = extendedCode
        self.message = message
        self.sql = sql
    }

    /// `SQLITE_FULL`: the disk (or `max_page_count`) is full.
    public var isDiskFull: Bool { code == SQLITE_FULL }
    /// `SQLITE_READONLY` and its extended codes: the database cannot be written.
    public var isReadOnly: Bool { code == SQLITE_READONLY }
    /// `SQLITE_BUSY` or `SQLITE_LOCKED`: another connection held a lock past the busy timeout.
    public var isBusy: Bool { code == SQLITE_BUSY || code == SQLITE_LOCKED }
    /// `SQLITE_CONSTRAINT`: any constraint (unique, foreign key, check, not null) failed.
    public var isConstraint: Bool { code == SQLITE_CONSTRAINT }
    /// A UNIQUE or PRIMARY KEY constraint failed.
    public var isUniqueConstraint: Bool {
        extendedCode == ExtendedCode.constraintUnique || extendedCode == ExtendedCode.constraintPrimaryKey
    }
    /// A FOREIGN KEY constraint failed.
    public var isForeignKeyConstraint: Bool { extendedCode == ExtendedCode.constraintForeignKey }
    /// `SQLITE_IOERR` and its extended codes (read, write, fsync, …).
    public var isIOError: Bool { code == SQLITE_IOERR }

    public var description: String {
        var s = "SQLite error \(extendedCode) (\(String(cString: sqlite3_errstr(extendedCode)))): \(message)"
        if let sql { s += " — in: \(sql)" }
        return s
    }
}

/// The one choke point: returns when `rc` is `SQLITE_OK`, `SQLITE_ROW` or `SQLITE_DONE`,
/// else throws the connection's error for it.
///
/// `db` gives the message (`sqlite3_errmsg`), which is only meaningful on the thread that
/// made the failing call, right after it: connections are confined, so it is.
@inline(__always)
func check(_ rc: Int32, _ db: OpaquePointer?, _ sql: String? = nil) throws(SQLiteError) {
    if rc == SQLITE_OK || rc == SQLITE_ROW || rc == SQLITE_DONE { return }
    throw SQLiteError(rc: rc, db: db, sql: sql)
}

extension SQLiteError {
    /// The error for a failed call that returned `rc` on `db`.
    init(rc: Int32, db: OpaquePointer?, sql: String?) {
        // With extended result codes on, rc is already extended; errcode agrees when the
        // failure was the connection's last call, and is the better source when rc is primary.
        var extended = rc
        var message = String(cString: sqlite3_errstr(rc))
        if let db {
            let last = sqlite3_extended_errcode(db)
            if last & 0xff == rc & 0xff {
                extended = last
                message = String(cString: sqlite3_errmsg(db))
            }
        }
        self.init(extendedCode: extended, message: message, sql: sql)
    }

    /// A misuse of this module's API (wrong argument count, several statements where one
    /// is expected): reported as `SQLITE_MISUSE`.
    static func misuse(_ message: String, sql: String? = nil) -> SQLiteError {
        SQLiteError(extendedCode: SQLITE_MISUSE, message: message, sql: sql)
    }
}

/// Extended result codes whose C macros are expressions Swift does not import.
enum ExtendedCode {
    static let constraintForeignKey: Int32 = SQLITE_CONSTRAINT | (3 << 8)
    static let constraintPrimaryKey: Int32 = SQLITE_CONSTRAINT | (6 << 8)
    static let constraintUnique: Int32 = SQLITE_CONSTRAINT | (8 << 8)
    static let abortRollback: Int32 = SQLITE_ABORT | (2 << 8)
}
