import CSQLite

/// One SQLite connection: opens the file, prepares statements, caches them.
///
/// **Not Sendable: use a connection from one thread at a time.** It is opened with
/// `SQLITE_OPEN_NOMUTEX` (SQLite's multi-thread mode): SQLite takes no lock per call, and
/// confinement gives the exclusivity instead. A `FULLMUTEX` connection would pay a lock on
/// every step and column read of the hot path and still not make the unit we care about —
/// bind, step, read columns, reset — atomic, so it would protect nothing we need.
/// `Database` hands a connection to exactly one thread at a time (the writer thread, or the
/// thread inside `read`), with a lock hand-off between uses.
///
/// Closing: `close()` or `deinit`. Statements still held elsewhere keep the handle alive as
/// a "zombie" (`sqlite3_close_v2`) until they are released; don't use them after closing.
public final class SQLiteConnection {
    /// The raw handle; nil once closed.
    private(set) var handle: OpaquePointer?
    /// The file this connection opened.
    public let path: String
    /// True when opened with `SQLITE_OPEN_READONLY`.
    public let isReadOnly: Bool
    /// Prepared statements by SQL text, reused by `cached(_:)`.
    var cache: [String: Statement] = [:]
    let cacheCapacity: Int
    /// Depth of nested `transaction` calls that became savepoints (names them uniquely).
    var nestedTransactionDepth = 0

    /// Opens (and, unless `readOnly` or `create` is false, creates) the database at `path`.
    ///
    /// - Parameters:
    ///   - readOnly: open with `SQLITE_OPEN_READONLY`; writes then fail with `isReadOnly`.
    ///   - create: create the file when missing (ignored when `readOnly`).
    ///   - busyTimeout: how long a call waits for another connection's lock before
    ///     failing with `isBusy`.
    ///   - statementCacheCapacity: how many statements `cached(_:)` keeps.
    /// - Throws: `SQLiteError` (e.g. `SQLITE_CANTOPEN`) when the file cannot be opened.
    /// - Thread: any; the connection then belongs to one thread at a time.
    public init(
        path: String, readOnly: Bool = false, create: Bool = true, busyTimeout: Duration = .seconds(5),
        statementCacheCapacity: Int = 64
    ) throws {
        var flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        flags |= readOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0))
        var db: OpaquePointer?
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        if rc != SQLITE_OK {
            let error = SQLiteError(rc: rc, db: db, sql: nil)
            sqlite3_close_v2(db)  // open allocates a handle even when it fails
            throw error
        }
        self.handle = db
        self.path = path
        self.isReadOnly = readOnly
        self.cacheCapacity = max(statementCacheCapacity, 1)
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, Int32(clamping: busyTimeout.milliseconds))
    }

    deinit { close() }

    /// Finalizes the cached statements and closes the handle. Idempotent.
    /// - Thread: the connection's thread.
    public func close() {
        guard let db = handle else { return }
        cache.removeAll()  // finalizes each cached statement nobody else holds
        handle = nil
        sqlite3_close_v2(db)
    }

    /// The open handle, or `SQLITE_MISUSE` once closed.
    @inline(__always)
    func db() throws(SQLiteError) -> OpaquePointer {
        guard let handle else { throw .misuse("the connection is closed") }
        return handle
    }

    /// The rowid of the last successful INSERT on this connection.
    public var lastInsertRowID: Int64 { handle.map { sqlite3_last_insert_rowid($0) } ?? 0 }

    /// Rows changed by the last INSERT, UPDATE or DELETE on this connection.
    public var changes: Int { handle.map { Int(sqlite3_changes64($0)) } ?? 0 }

    /// Rows changed since the connection opened.
    public var totalChanges: Int { handle.map { Int(sqlite3_total_changes64($0)) } ?? 0 }

    /// True while a transaction is open (SQLite is not in autocommit mode).
    public var isInTransaction: Bool { handle.map { sqlite3_get_autocommit($0) == 0 } ?? false }

    /// Resets every statement of this connection that is mid-step, so none pins a read
    /// snapshot or blocks a COMMIT.
    func resetBusyStatements() {
        guard let db = handle else { return }
        var s = sqlite3_next_stmt(db, nil)
        while let stmt = s {
            if sqlite3_stmt_busy(stmt) != 0 { sqlite3_reset(stmt) }
            s = sqlite3_next_stmt(db, stmt)
        }
    }

    /// Statements not yet finalized on this connection (tests: nothing leaks).
    var unfinalizedStatementCount: Int {
        guard let db = handle else { return 0 }
        var n = 0
        var s = sqlite3_next_stmt(db, nil)
        while let stmt = s {
            n += 1
            s = sqlite3_next_stmt(db, stmt)
        }
        return n
    }
}

@available(*, unavailable, message: "a connection is confined to one thread at a time")
extension SQLiteConnection: Sendable {}
