import CPostgres

/// A query sent by `PostgresConnection.send(_:_:)` whose answer has not been read yet.
public struct SentQuery {
    let statement: PreparedStatement
}

// One query in flight: sent now, its rows read later, so the server runs it while the
// caller does something else (the fan-out's scanner reads its next rows while the engine
// sends the current ones).
extension PostgresConnection {
    /// Sends one query with `args` bound in binary and returns without waiting for its
    /// answer. Until `receive(_:)` has read it, run nothing else on this connection: a
    /// statement run meanwhile first reads and drops that answer (libpq does), and
    /// `receive` then throws.
    /// - Throws: `PostgresError` as `query(_:_:)` for preparing it (a statement seen for
    ///   the first time is prepared first, which waits), `.connection` when it cannot be sent.
    /// - Thread: the connection's thread.
    public func send(_ sql: String, _ args: [PostgresValue] = []) throws(PostgresError) -> SentQuery {
        let statement = try prepared(sql)
        let conn = try self.conn()
        let params = try EncodedParameters(args, types: statement.parameterTypes, sql: sql)
        let sent = params.withArrays { values, lengths, formats, n in
            PQsendQueryPrepared(conn, statement.name, n, values, lengths, formats, 1)
        }
        guard sent == 1 else { throw PostgresError.connection(conn, sql: sql, target: target) }
        return SentQuery(statement: statement)
    }

    /// The rows of `query`, waiting for them if they have not all arrived (bounded by the
    /// session's statement timeout). Reads the query's whole answer, also when it failed.
    /// - Throws: `PostgresError` as `query(_:_:)`.
    /// - Thread: the connection's thread.
    public func receive(_ query: SentQuery) throws(PostgresError) -> [PostgresRow] {
        let conn = try self.conn()
        let sql = query.statement.sql
        guard let first = PQgetResult(conn) else { throw PostgresError.connection(conn, sql: sql, target: target) }
        while let extra = PQgetResult(conn) { PQclear(extra) }  // the NULL that ends the query
        let result = try check(first, conn, expected: [PGRES_TUPLES_OK, PGRES_COMMAND_OK], sql: sql, target: target)
        return try result.rows(columns: query.statement.columns, sql: sql)
    }
}
