import CPostgres

// Preparing statements, the per-connection cache, and running one prepared statement.
extension PostgresConnection {
    /// The prepared statement for `sql` from this session's cache, prepared and described
    /// on first use (two round trips, once per session).
    /// - Throws: `PostgresError` `.server` for a syntax error or unknown table.
    func prepared(_ sql: String) throws(PostgresError) -> PreparedStatement {
        if let statement = cache[sql] {
            if cacheOrder.last != sql, let i = cacheOrder.lastIndex(of: sql) {
                cacheOrder.remove(at: i)
                cacheOrder.append(sql)
            }
            return statement
        }
        let conn = try self.conn()
        if cache.count >= options.statementCacheCapacity, !cacheOrder.isEmpty {
            let evicted = cacheOrder.removeFirst()
            if let old = cache.removeValue(forKey: evicted) {
                try command("DEALLOCATE \(old.name)")
            }
        }
        nextStatementNumber += 1
        let name = "herald_\(nextStatementNumber)"
        _ = try check(PQprepare(conn, name, sql, 0, nil), conn, expected: [PGRES_COMMAND_OK], sql: sql, target: target)
        let described = try check(
            PQdescribePrepared(conn, name), conn, expected: [PGRES_COMMAND_OK], sql: sql, target: target)
        var types: [UInt32] = []
        for i in 0..<PQnparams(described.handle) { types.append(PQparamtype(described.handle, i)) }
        let statement = PreparedStatement(name: name, sql: sql, parameterTypes: types, columns: described.columns())
        cache[sql] = statement
        cacheOrder.append(sql)
        return statement
    }

    /// Runs a prepared statement with `args` bound in binary; results in binary.
    func execute(_ statement: PreparedStatement, _ args: [PostgresValue]) throws(PostgresError) -> PostgresResult {
        let conn = try self.conn()
        let params = try EncodedParameters(args, types: statement.parameterTypes, sql: statement.sql)
        let result = params.withArrays { values, lengths, formats, n in
            PQexecPrepared(conn, statement.name, n, values, lengths, formats, 1)
        }
        return try check(
            result, conn, expected: [PGRES_COMMAND_OK, PGRES_TUPLES_OK], sql: statement.sql, target: target)
    }

    /// Runs SQL text without parameters through the simple protocol (several statements
    /// allowed; text results, discarded): BEGIN/COMMIT, SET, LISTEN, DDL.
    @discardableResult
    func command(_ sql: String) throws(PostgresError) -> PostgresResult {
        let conn = try self.conn()
        return try check(
            PQexec(conn, sql), conn, expected: [PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY],
            sql: sql, target: target)
    }

    /// Forgets every prepared statement (the server's are gone with a lost session).
    func dropStatementCache() {
        cache.removeAll()
        cacheOrder.removeAll()
    }

    /// `name` as a double-quoted SQL identifier.
    static func quoteIdentifier(_ name: String) -> String {
        "\"" + name.replacingAll("\"", with: "\"\"") + "\""
    }
}
