import CPostgres

/// An owned `PGresult`, cleared (`PQclear`) when released. Internal: rows are copied out
/// into `PostgresRow` values before a result leaves this module.
final class PostgresResult {
    let handle: OpaquePointer

    init(_ handle: OpaquePointer) { self.handle = handle }

    deinit { PQclear(handle) }

    var rowCount: Int { Int(PQntuples(handle)) }
    var columnCount: Int { Int(PQnfields(handle)) }

    /// Rows the command touched (`PQcmdTuples`: INSERT, UPDATE, DELETE, COPY, …); 0 when
    /// the command reports none.
    var affectedRows: Int {
        guard let p = PQcmdTuples(handle) else { return 0 }
        return Int(String(cString: p)) ?? 0
    }

    /// The command tag (`"INSERT 0 1"`, `"ROLLBACK"`).
    var commandStatus: String { PQcmdStatus(handle).map { String(cString: $0) } ?? "" }

    /// The column table of this result (names and type OIDs).
    func columns() -> PostgresColumns {
        var names: [String] = []
        var types: [UInt32] = []
        for i in 0..<Int32(columnCount) {
            names.append(PQfname(handle, i).map { String(cString: $0) } ?? "?column?")
            types.append(PQftype(handle, i))
        }
        return PostgresColumns(names: names, types: types)
    }

    /// Copies every row out, decoding each binary value by its column's type.
    /// - Throws: `PostgresError` `.decoding` for a type this module does not read or a
    ///   value whose length does not fit its type.
    func rows(columns: PostgresColumns, sql: String?) throws(PostgresError) -> [PostgresRow] {
        var out: [PostgresRow] = []
        out.reserveCapacity(rowCount)
        for r in 0..<Int32(rowCount) {
            var values: [PostgresValue] = []
            values.reserveCapacity(columns.count)
            for c in 0..<Int32(columns.count) {
                if PQgetisnull(handle, r, c) != 0 {
                    values.append(.null)
                    continue
                }
                let length = Int(PQgetlength(handle, r, c))
                let bytes = UnsafeRawBufferPointer(start: PQgetvalue(handle, r, c), count: length)
                do {
                    values.append(try PostgresBinary.decode(bytes, type: columns.types[Int(c)]))
                } catch {
                    throw .decoding("column \"\(columns.names[Int(c)])\": \(error.message)", sql: sql)
                }
            }
            out.append(PostgresRow(columns: columns, values: values))
        }
        return out
    }
}
