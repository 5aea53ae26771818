/// The column names of one result, shared by all its rows.
public final class RowColumns: Sendable {
    /// Names in column order.
    public let names: [String]
    private let indexByName: [String: Int]

    /// Names in column order; when two columns share a name, the first wins for lookups.
    public init(_ names: [String]) {
        self.names = names
        var index: [String: Int] = [:]
        for (i, name) in names.enumerated() where index[name] == nil { index[name] = i }
        indexByName = index
    }

    /// The position of the column called `name`.
    public func index(of name: String) -> Int? { indexByName[name] }
}

/// One result row, copied out of SQLite: safe to keep and to send between threads.
public struct Row: Sendable, Equatable {
    /// The result's column names.
    public let columns: RowColumns
    /// The values, in column order.
    public let values: [SQLValue]

    /// A row of `values` under `columns` (normally made by `query`).
    public init(columns: RowColumns, values: [SQLValue]) {
        self.columns = columns
        self.values = values
    }

    /// How many columns.
    public var count: Int { values.count }

    /// The value of column `i` (0-based). Traps when out of range, like an array.
    public subscript(i: Int) -> SQLValue { values[i] }

    /// The value of the column called `name`, or nil when there is no such column.
    public subscript(name: String) -> SQLValue? {
        columns.index(of: name).map { values[$0] }
    }

    public static func == (a: Row, b: Row) -> Bool {
        a.values == b.values && a.columns.names == b.columns.names
    }
}
