/// The column table of one statement's result: names and type OIDs, shared by every row.
/// Rows are read by name through it (`row["seq"]`), so a query's column order is free.
public final class PostgresColumns: Sendable {
    /// Names in column order.
    public let names: [String]
    /// Type OIDs in column order.
    let types: [UInt32]
    private let indexByName: [String: Int]

    /// When two columns share a name, the first wins for lookups.
    init(names: [String], types: [UInt32]) {
        self.names = names
        self.types = types
        var index: [String: Int] = [:]
        for (i, name) in names.enumerated() where index[name] == nil { index[name] = i }
        indexByName = index
    }

    /// How many columns.
    public var count: Int { names.count }

    /// The position of the column called `name`.
    public func index(of name: String) -> Int? { indexByName[name] }
}

/// One result row, copied out of libpq: safe to keep and to send between threads.
public struct PostgresRow: Sendable, Equatable {
    /// The result's column table.
    public let columns: PostgresColumns
    /// The values, in column order.
    public let values: [PostgresValue]

    /// The value of the column called `name`, or nil when there is no such column.
    public subscript(name: String) -> PostgresValue? {
        columns.index(of: name).map { values[$0] }
    }

    /// The value of column `name`, or a `.decoding` error naming it when the result has no
    /// such column (a typo in the SQL or the reader shows at once).
    /// - Throws: `PostgresError` `.decoding`.
    public func value(_ name: String) throws(PostgresError) -> PostgresValue {
        guard let i = columns.index(of: name) else {
            throw .decoding("no column \"\(name)\" in the result (columns: \(columns.names.joined(separator: ", ")))")
        }
        return values[i]
    }

    /// Column `name` as an integer. - Throws: `.decoding` when missing, NULL or not an integer.
    public func int64(_ name: String) throws(PostgresError) -> Int64 {
        guard let v = try value(name).int64Value else { throw .decoding("column \"\(name)\" is not an integer") }
        return v
    }

    /// Column `name` as text. - Throws: `.decoding` when missing, NULL or not text.
    public func text(_ name: String) throws(PostgresError) -> String {
        guard let v = try value(name).textValue else { throw .decoding("column \"\(name)\" is not text") }
        return v
    }

    /// Column `name` as bytes. - Throws: `.decoding` when missing, NULL or not bytea.
    public func bytea(_ name: String) throws(PostgresError) -> [UInt8] {
        guard let v = try value(name).byteaValue else { throw .decoding("column \"\(name)\" is not bytea") }
        return v
    }

    /// Column `name` as a boolean. - Throws: `.decoding` when missing, NULL or not bool.
    public func bool(_ name: String) throws(PostgresError) -> Bool {
        guard let v = try value(name).boolValue else { throw .decoding("column \"\(name)\" is not a bool") }
        return v
    }

    /// Column `name` as microseconds since 1970. - Throws: `.decoding` when not a timestamp.
    public func timestamp(_ name: String) throws(PostgresError) -> Int64 {
        guard let v = try value(name).timestampMicros else { throw .decoding("column \"\(name)\" is not a timestamp") }
        return v
    }

    public static func == (a: PostgresRow, b: PostgresRow) -> Bool {
        a.values == b.values && a.columns.names == b.columns.names
    }
}
