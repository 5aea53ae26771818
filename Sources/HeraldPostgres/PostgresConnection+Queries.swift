// Conveniences over prepared statements: one statement, `$1…$n` bound in binary.
extension PostgresConnection {
    /// Runs every statement in `sql` in order through the simple protocol (migrations,
    /// schema); rows are discarded. Outside a transaction, they run as one implicit
    /// transaction: all or none.
    /// - Throws: `PostgresError` for the first statement that fails.
    /// - Thread: the connection's thread.
    public func execute(_ sql: String) throws(PostgresError) {
        try command(sql)
    }

    /// Runs one statement (INSERT, UPDATE, DELETE) with `args` bound to `$1…$n`.
    /// - Returns: rows changed (the command tag's count).
    /// - Throws: `PostgresError` (`.server` with its SQLSTATE; `.misuse` on a wrong
    ///   argument count or a value that does not fit its parameter's type).
    /// - Thread: the connection's thread.
    @discardableResult
    public func run(_ sql: String, _ args: [PostgresValue] = []) throws(PostgresError) -> Int {
        try execute(try prepared(sql), args).affectedRows
    }

    /// Runs one query and copies out every row, decoded by column type.
    /// - Throws: as `run(_:_:)`, and `.decoding` for a column type not decoded here.
    /// - Thread: the connection's thread.
    public func query(_ sql: String, _ args: [PostgresValue] = []) throws(PostgresError) -> [PostgresRow] {
        let statement = try prepared(sql)
        return try execute(statement, args).rows(columns: statement.columns, sql: sql)
    }

    /// The first row of a query, or nil when it has none.
    /// - Throws: as `query(_:_:)`.
    /// - Thread: the connection's thread.
    public func queryOne(_ sql: String, _ args: [PostgresValue] = []) throws(PostgresError) -> PostgresRow? {
        try query(sql, args).first
    }

    /// The first column of the first row (`SELECT count(*) …`), or nil when no row.
    /// - Throws: as `query(_:_:)`.
    /// - Thread: the connection's thread.
    public func queryValue(_ sql: String, _ args: [PostgresValue] = []) throws(PostgresError) -> PostgresValue? {
        try query(sql, args).first?.values.first
    }
}
