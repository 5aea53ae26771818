import CPostgres
import Glibc

/// One statement of a pipeline: SQL with `$1…$n` and its arguments.
public struct PostgresStatement: Sendable {
    public let sql: String
    public let args: [PostgresValue]

    public init(_ sql: String, _ args: [PostgresValue] = []) {
        self.sql = sql
        self.args = args
    }
}

/// What one statement of a pipeline returned.
public struct PostgresCommandResult: Sendable {
    /// Its rows (empty for INSERT/UPDATE/DELETE without RETURNING).
    public let rows: [PostgresRow]
    /// Rows it changed (the command tag's count).
    public let affectedRows: Int
}

extension PostgresConnection {
    /// Runs `statements` in libpq's pipeline mode: all are sent before the first answer is
    /// read, so a batch costs about one round trip instead of one per statement. They run
    /// in one implicit transaction ending at the pipeline's sync point: all or none (when
    /// one fails, the later ones are skipped and the earlier ones rolled back). Inside
    /// `transaction { }` they join that transaction instead.
    ///
    /// Sends in non-blocking mode and reads the server's answers while it sends, so a
    /// batch of any size cannot deadlock on full socket buffers.
    /// - Returns: one result per statement, in order.
    /// - Throws: the first failing statement's `PostgresError`; `.connection` when the
    ///   session is lost mid-way.
    /// - Thread: the connection's thread.
    public func pipeline(_ statements: [PostgresStatement]) throws(PostgresError) -> [PostgresCommandResult] {
        // Prepare outside the pipeline: a statement's parameter types are needed to encode
        // its arguments before it is sent.
        var prepared: [PreparedStatement] = []
        prepared.reserveCapacity(statements.count)
        for s in statements { prepared.append(try self.prepared(s.sql)) }
        let encoded = try zip(statements, prepared).map { (s, p) throws(PostgresError) in
            try EncodedParameters(s.args, types: p.parameterTypes, sql: s.sql)
        }
        let conn = try self.conn()
        guard PQenterPipelineMode(conn) == 1 else { throw PostgresError.connection(conn, target: target, kind: .misuse) }
        defer { leavePipeline(conn) }
        try send(prepared, encoded, conn)
        return try receive(prepared, conn)
    }

    /// Leaves pipeline mode, reading and dropping whatever an error left unread (libpq
    /// refuses to leave while results are pending). Gives up when the session is gone.
    private func leavePipeline(_ conn: OpaquePointer) {
        while PQpipelineStatus(conn) != PQ_PIPELINE_OFF {
            if PQexitPipelineMode(conn) == 1 || PQstatus(conn) != CONNECTION_OK { return }
            if let r = PQgetResult(conn) { PQclear(r) }
        }
    }

    private func send(_ prepared: [PreparedStatement], _ encoded: [EncodedParameters], _ conn: OpaquePointer)
        throws(PostgresError)
    {
        PQsetnonblocking(conn, 1)
        defer { PQsetnonblocking(conn, 0) }
        for (i, statement) in prepared.enumerated() {
            let sent = encoded[i].withArrays { values, lengths, formats, n in
                PQsendQueryPrepared(conn, statement.name, n, values, lengths, formats, 1)
            }
            guard sent == 1 else { throw PostgresError.connection(conn, sql: statement.sql, target: target) }
            if i % 64 == 63 { try flushConsuming(conn, untilEmpty: false) }
        }
        guard PQpipelineSync(conn) == 1 else { throw PostgresError.connection(conn, target: target) }
        try flushConsuming(conn, untilEmpty: true)
    }

    /// Flushes libpq's output; while the socket will not take more, reads what the server
    /// sent into libpq's input buffer, so neither side waits on the other.
    private func flushConsuming(_ conn: OpaquePointer, untilEmpty: Bool) throws(PostgresError) {
        while true {
            let rc = PQflush(conn)
            if rc == 0 { return }
            guard rc == 1 else { throw PostgresError.connection(conn, target: target) }
            if !untilEmpty { return }
            var fd = pollfd(fd: PQsocket(conn), events: Int16(POLLIN | POLLOUT), revents: 0)
            let ready = poll(&fd, 1, Int32(clamping: max(options.statementTimeoutMillis, 30_000)))
            if ready < 0, errno == EINTR { continue }
            guard ready > 0 else {
                throw PostgresError(kind: .connection, message: "the server took no data for the pipeline", target: target)
            }
            if fd.revents & Int16(POLLIN) != 0, PQconsumeInput(conn) == 0 {
                throw PostgresError.connection(conn, target: target)
            }
        }
    }

    private func receive(_ prepared: [PreparedStatement], _ conn: OpaquePointer) throws(PostgresError)
        -> [PostgresCommandResult]
    {
        var results: [PostgresCommandResult] = []
        results.reserveCapacity(prepared.count)
        var firstError: PostgresError?
        for statement in prepared {
            guard let r = PQgetResult(conn) else { throw PostgresError.connection(conn, sql: statement.sql, target: target) }
            let owned = PostgresResult(r)
            while let extra = PQgetResult(conn) { PQclear(extra) }  // the NULL that ends this statement
            let status = PQresultStatus(r)
            if status == PGRES_PIPELINE_ABORTED { continue }
            if status == PGRES_FATAL_ERROR {
                if firstError == nil {
                    firstError = PostgresError(result: r, conn: conn, sql: statement.sql, target: target)
                }
                continue
            }
            results.append(
                PostgresCommandResult(
                    rows: try owned.rows(columns: statement.columns, sql: statement.sql),
                    affectedRows: owned.affectedRows))
        }
        // The sync point's own result.
        if let sync = PQgetResult(conn) {
            let status = PQresultStatus(sync)
            PQclear(sync)
            if status != PGRES_PIPELINE_SYNC, firstError == nil {
                firstError = PostgresError.misuse("the pipeline ended without its sync point")
            }
        }
        if let firstError { throw firstError }
        return results
    }
}
