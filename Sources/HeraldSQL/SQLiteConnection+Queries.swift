// Conveniences over cached statements: one statement, arguments bound by position.
extension SQLiteConnection {
    /// Runs one statement (INSERT, UPDATE, DELETE, DDL) with `args` bound to its `?`s.
    /// - Returns: rows changed.
    /// - Throws: `SQLiteError` (constraint, disk full, …); `SQLITE_MISUSE` on a wrong
    ///   argument count or several statements.
    /// - Thread: the connection's thread.
    @discardableResult
    public func run(_ sql: String, _ args: [SQLValue] = []) throws -> Int {
        let statement = try cached(sql)
        try statement.bind(args)
        return try statement.run()
    }

    /// Runs one query and copies out every row. For millions of rows use `forEachRow` or
    /// a statement and page by key.
    /// - Throws: as `run(_:_:)`.
    /// - Thread: the connection's thread.
    public func query(_ sql: String, _ args: [SQLValue] = []) throws -> [Row] {
        var rows: [Row] = []
        let statement = try cached(sql)
        defer { statement.reset() }  // a stepped statement would pin the read snapshot
        try statement.bind(args)
        let columns = RowColumns(statement.columnNames)
        while try statement.step() { rows.append(statement.row(columns: columns)) }
        return rows
    }

    /// The first row of a query, or nil when it has none.
    /// - Throws: as `run(_:_:)`.
    /// - Thread: the connection's thread.
    public func queryOne(_ sql: String, _ args: [SQLValue] = []) throws -> Row? {
        let statement = try cached(sql)
        defer { statement.reset() }
        try statement.bind(args)
        guard try statement.step() else { return nil }
        return statement.row(columns: RowColumns(statement.columnNames))
    }

    /// The first column of the first row (`SELECT count(*) …`), or nil when no row.
    /// - Throws: as `run(_:_:)`.
    /// - Thread: the connection's thread.
    public func queryValue(_ sql: String, _ args: [SQLValue] = []) throws -> SQLValue? {
        let statement = try cached(sql)
        defer { statement.reset() }
        try statement.bind(args)
        guard try statement.step() else { return nil }
        return statement.value(0)
    }

    /// Streams a query's rows to `body` without copying them: read the columns from the
    /// statement inside `body`. Return false from `body` to stop early.
    /// - Throws: `SQLiteError`, or what `body` throws.
    /// - Thread: the connection's thread.
    public func forEachRow(_ sql: String, _ args: [SQLValue] = [], _ body: (Statement) throws -> Bool) throws {
        let statement = try cached(sql)
        defer { statement.reset() }
        try statement.bind(args)
        while try statement.step() {
            if try !body(statement) { return }
        }
    }
}
