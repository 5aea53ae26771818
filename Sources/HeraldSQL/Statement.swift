import CSQLite

/// A prepared statement, owned: `sqlite3_finalize` runs when it is released.
///
/// Not Sendable: it belongs to its connection's thread. Use it as bind → `step()` until
/// false → `reset()`. Column readers are valid while `step()` last returned true.
/// Don't use a statement after its connection is closed.
public final class Statement {
    let handle: OpaquePointer
    /// The statement's connection (kept alive by SQLite until this statement is finalized).
    let db: OpaquePointer
    /// The SQL it was prepared from (attached to errors).
    public let sql: String

    init(_ handle: OpaquePointer, sql: String) {
        self.handle = handle
        self.db = sqlite3_db_handle(handle)
        self.sql = sql
    }

    deinit { sqlite3_finalize(handle) }

    /// Runs the statement to its next row.
    /// - Returns: true when a row is ready for the column readers, false when done.
    /// - Throws: `SQLiteError` (constraint, disk full, busy, …); `reset()` before reuse.
    /// - Thread: the connection's thread.
    @discardableResult
    public func step() throws -> Bool {
        let rc = sqlite3_step(handle)
        if rc == SQLITE_ROW { return true }
        if rc == SQLITE_DONE { return false }
        try check(rc, db, sql)
        return false
    }

    /// Steps to the end, discarding rows (an INSERT, UPDATE or DELETE), then resets.
    /// - Returns: rows changed (`sqlite3_changes64`).
    /// - Throws: `SQLiteError` from `step()`; the statement is reset either way.
    @discardableResult
    public func run() throws -> Int {
        defer { sqlite3_reset(handle) }
        while try step() {}
        return Int(sqlite3_changes64(db))
    }

    /// Rewinds the statement so it can run again; bindings stay.
    public func reset() { sqlite3_reset(handle) }

    /// Sets every parameter back to NULL.
    public func clearBindings() { sqlite3_clear_bindings(handle) }

    /// How many `?` parameters the statement takes.
    public var parameterCount: Int32 { sqlite3_bind_parameter_count(handle) }

    /// How many columns a row has.
    public var columnCount: Int32 { sqlite3_column_count(handle) }

    /// The name of column `i` (its `AS` alias when given).
    public func columnName(_ i: Int32) -> String {
        sqlite3_column_name(handle, i).map { String(cString: $0) } ?? ""
    }

    /// Every column name, in order.
    public var columnNames: [String] { (0..<columnCount).map(columnName) }
}

@available(*, unavailable, message: "a statement is confined to its connection's thread")
extension Statement: Sendable {}
