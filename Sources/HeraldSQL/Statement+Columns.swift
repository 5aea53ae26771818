import CSQLite

// Reading the current row. Indexes are 0-based, as in SQLite. Valid only while `step()`
// last returned true. A NULL reads as 0, 0.0, "" or [] (SQLite's conversions); ask
// `isNull` when NULL means something.
extension Statement {
    /// True when column `i` is NULL.
    @inline(__always)
    public func isNull(_ i: Int32) -> Bool { sqlite3_column_type(handle, i) == SQLITE_NULL }

    /// Column `i` as an integer.
    @inline(__always)
    public func int64(_ i: Int32) -> Int64 { sqlite3_column_int64(handle, i) }

    /// Column `i` as an `Int`.
    @inline(__always)
    public func int(_ i: Int32) -> Int { Int(sqlite3_column_int64(handle, i)) }

    /// Column `i` as a floating-point number.
    @inline(__always)
    public func double(_ i: Int32) -> Double { sqlite3_column_double(handle, i) }

    /// Column `i` as text (invalid UTF-8 is repaired with U+FFFD).
    public func text(_ i: Int32) -> String {
        // column_text before column_bytes, so the byte count is of the UTF-8 form.
        guard let p = sqlite3_column_text(handle, i) else { return "" }
        let n = Int(sqlite3_column_bytes(handle, i))
        return String(decoding: UnsafeBufferPointer(start: p, count: n), as: UTF8.self)
    }

    /// Column `i` as bytes (copied).
    public func blob(_ i: Int32) -> [UInt8] {
        withBlob(i) { Array($0.bindMemory(to: UInt8.self)) }
    }

    /// Lends column `i`'s bytes without copying. The buffer is valid only inside `body`.
    public func withBlob<T>(_ i: Int32, _ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
        // column_blob before column_bytes, as SQLite asks.
        let p = sqlite3_column_blob(handle, i)
        let n = Int(sqlite3_column_bytes(handle, i))
        return try body(UnsafeRawBufferPointer(start: n > 0 ? p : nil, count: n))
    }

    /// Column `i` as the value of its storage class.
    public func value(_ i: Int32) -> SQLValue {
        switch sqlite3_column_type(handle, i) {
        case SQLITE_INTEGER: .integer(int64(i))
        case SQLITE_FLOAT: .real(double(i))
        case SQLITE_TEXT: .text(text(i))
        case SQLITE_BLOB: .blob(blob(i))
        default: .null
        }
    }

    /// The current row as a value (copies every column).
    public func row(columns: RowColumns) -> Row {
        Row(columns: columns, values: (0..<columnCount).map(value))
    }
}
