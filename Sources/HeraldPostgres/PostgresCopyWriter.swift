import CPostgres

/// Rows for `COPY … FROM STDIN (FORMAT binary)`, encoded and sent in chunks.
///
/// Each field is encoded as its value's own type (`.int8` as `int8`, `.bytea` as `bytea`,
/// `.text` as `text`, `.bool`, `.timestamp` as `timestamptz`): binary COPY states no
/// types, so the table's columns must be exactly those (an `int4` column fails the COPY).
public struct PostgresCopyWriter: ~Copyable {
    let conn: OpaquePointer
    let sql: String
    let target: String
    var buffer: [UInt8] = []
    /// Rows appended so far.
    public private(set) var rowCount = 0
    static let chunkBytes = 256 * 1024

    init(conn: OpaquePointer, sql: String, target: String) {
        self.conn = conn
        self.sql = sql
        self.target = target
        buffer.reserveCapacity(Self.chunkBytes + 4096)
        // Signature, flags (no OIDs), header extension length 0.
        buffer.append(contentsOf: Array("PGCOPY\n".utf8) + [0xff, 0x0d, 0x0a, 0x00])
        PostgresBinary.append(Int32(0), to: &buffer)
        PostgresBinary.append(Int32(0), to: &buffer)
    }

    /// Appends one row (every field in column order; `.null` for NULL).
    /// - Throws: `.misuse` for a value with no binary COPY form (an empty array),
    ///   `.connection` when sending a full chunk fails.
    public mutating func append(_ row: [PostgresValue]) throws(PostgresError) {
        guard let n = Int16(exactly: row.count) else { throw .misuse("a COPY row of \(row.count) fields", sql: sql) }
        PostgresBinary.append(n, to: &buffer)
        for value in row {
            do {
                guard let type = PostgresBinary.naturalType(of: value) else {
                    PostgresBinary.append(Int32(-1), to: &buffer)
                    continue
                }
                try PostgresBinary.appendField(value, as: type, to: &buffer)
            } catch {
                throw .misuse("COPY field: \(error.message)", sql: sql)
            }
        }
        rowCount += 1
        if buffer.count >= Self.chunkBytes { try flush() }
    }

    /// Sends what is buffered (blocking until libpq has taken it).
    mutating func flush() throws(PostgresError) {
        guard !buffer.isEmpty else { return }
        let rc = buffer.withUnsafeBytes { raw in
            PQputCopyData(conn, raw.baseAddress!.assumingMemoryBound(to: CChar.self), Int32(raw.count))
        }
        guard rc == 1 else { throw PostgresError.connection(conn, sql: sql, target: target) }
        buffer.removeAll(keepingCapacity: true)
    }

    /// The trailer (field count -1), then the end of the data.
    mutating func finish() throws(PostgresError) {
        PostgresBinary.append(Int16(-1), to: &buffer)
        try flush()
        guard PQputCopyEnd(conn, nil) == 1 else { throw PostgresError.connection(conn, sql: sql, target: target) }
    }
}

extension PostgresConnection {
    /// Bulk load: runs `sql` (a `COPY table (columns) FROM STDIN (FORMAT binary)`) and
    /// streams the rows `body` appends. All rows or none: the COPY is one statement.
    /// - Returns: rows loaded (the server's count).
    /// - Throws: `PostgresError` from the server (a unique violation, a column type that
    ///   is not the value's: see `PostgresCopyWriter`), or what `body` throws (the COPY
    ///   is then aborted and nothing is loaded).
    /// - Thread: the connection's thread.
    @discardableResult
    public func copyIn(_ sql: String, _ body: (inout PostgresCopyWriter) throws -> Void) throws -> Int {
        let conn = try self.conn()
        _ = try check(PQexec(conn, sql), conn, expected: [PGRES_COPY_IN], sql: sql, target: target)
        var writer = PostgresCopyWriter(conn: conn, sql: sql, target: target)
        do {
            try body(&writer)
            try writer.finish()
        } catch {
            _ = PQputCopyEnd(conn, "aborted by the client")
            drainResults(sql: sql)
            throw error
        }
        let last = PQgetResult(conn)
        drainResults(sql: sql)
        return try check(last, conn, expected: [PGRES_COMMAND_OK], sql: sql, target: target).affectedRows
    }

    /// Reads and drops results until libpq has none left (after a COPY, or an error in
    /// the middle of a multi-result exchange), so the session is ready for the next call.
    func drainResults(sql: String) {
        guard let conn = handle else { return }
        while let r = PQgetResult(conn) { PQclear(r) }
    }
}
