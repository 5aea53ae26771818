import CSQLite

// Preparing and running SQL text; the per-connection statement cache.
extension SQLiteConnection {
    /// Runs every statement in `sql` in order (migrations, schema, pragmas); rows are
    /// discarded.
    /// - Throws: `SQLiteError` for the first statement that fails (its SQL attached); the
    ///   statements before it stay executed.
    /// - Thread: the connection's thread.
    public func execute(_ sql: String) throws {
        let db = try self.db()
        try sql.withCString { start in
            var next: UnsafePointer<CChar>? = start
            while let p = next, p.pointee != 0 {
                var stmt: OpaquePointer?
                try check(sqlite3_prepare_v2(db, p, -1, &stmt, &next), db, sql)
                guard let stmt else { continue }  // only whitespace or a comment was left
                defer { sqlite3_finalize(stmt) }
                var rc: Int32
                repeat { rc = sqlite3_step(stmt) } while rc == SQLITE_ROW
                try check(rc, db, String(cString: sqlite3_sql(stmt)))
            }
        }
    }

    /// Prepares exactly one statement; the caller owns it (finalized when released).
    /// - Throws: `SQLiteError` on a syntax error or unknown table, and `SQLITE_MISUSE` when
    ///   `sql` holds no statement or more than one (use `execute(_:)` for several).
    /// - Thread: the connection's thread.
    public func prepare(_ sql: String) throws -> Statement {
        try prepare(sql, persistent: false)
    }

    /// The statement for `sql` from this connection's cache (prepared on first use), reset
    /// and with its bindings cleared.
    ///
    /// A cached statement is shared by every caller with the same SQL on this connection:
    /// finish with it (step to the end or `reset()`) before anyone asks for it again.
    /// - Throws: as `prepare(_:)`.
    /// - Thread: the connection's thread.
    public func cached(_ sql: String) throws -> Statement {
        if let statement = cache[sql] {
            statement.reset()
            statement.clearBindings()
            return statement
        }
        let statement = try prepare(sql, persistent: true)
        if cache.count >= cacheCapacity { cache.remove(at: cache.startIndex) }
        cache[sql] = statement
        return statement
    }

    func prepare(_ sql: String, persistent: Bool) throws -> Statement {
        let db = try self.db()
        var stmt: OpaquePointer?
        var trailing = false
        let flags = UInt32(persistent ? SQLITE_PREPARE_PERSISTENT : 0)
        let rc = sql.withCString { p in
            var tail: UnsafePointer<CChar>?
            let rc = sqlite3_prepare_v3(db, p, -1, flags, &stmt, &tail)
            if rc == SQLITE_OK, let tail { trailing = Self.holdsStatement(db, tail) }
            return rc
        }
        try check(rc, db, sql)
        guard let stmt else { throw SQLiteError.misuse("no SQL statement in the text", sql: sql) }
        if trailing {
            sqlite3_finalize(stmt)
            throw SQLiteError.misuse("prepare takes one statement; use execute(_:) for several", sql: sql)
        }
        return Statement(stmt, sql: sql)
    }

    /// True when `text` holds a statement (or something that is not one), as opposed to
    /// whitespace and comments only.
    private static func holdsStatement(_ db: OpaquePointer, _ text: UnsafePointer<CChar>) -> Bool {
        var p = text
        while p.pointee == 0x20 || (p.pointee >= 0x09 && p.pointee <= 0x0d) { p += 1 }
        if p.pointee == 0 { return false }
        var stmt: OpaquePointer?
        let rc = sqlite3_prepare_v2(db, p, -1, &stmt, nil)
        sqlite3_finalize(stmt)
        return rc != SQLITE_OK || stmt != nil
    }
}
