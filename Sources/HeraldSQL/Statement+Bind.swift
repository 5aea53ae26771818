import CSQLite

// Binding parameters. Indexes are 1-based, as in SQLite. Text and blobs are copied by
// SQLite (SQLITE_TRANSIENT), so the buffers need not outlive the call.
extension Statement {
    /// Binds `values` to parameters 1…n.
    /// - Throws: `SQLITE_MISUSE` when the count differs from `parameterCount`, or
    ///   `SQLiteError` (e.g. `SQLITE_TOOBIG`).
    public func bind(_ values: [SQLValue]) throws {
        guard values.count == Int(parameterCount) else {
            throw SQLiteError.misuse("the statement takes \(parameterCount) arguments, got \(values.count)", sql: sql)
        }
        for (i, value) in values.enumerated() {
            try bind(Int32(i + 1), value)
        }
    }

    /// Binds one value to parameter `index`.
    public func bind(_ index: Int32, _ value: SQLValue) throws {
        switch value {
        case .null: try bindNull(index)
        case .integer(let v): try bind(index, int64: v)
        case .real(let v): try bind(index, double: v)
        case .text(let v): try bind(index, text: v)
        case .blob(let v): try bind(index, blob: v)
        }
    }

    /// Binds NULL.
    public func bindNull(_ index: Int32) throws {
        try check(sqlite3_bind_null(handle, index), db, sql)
    }

    /// Binds an integer (no allocation).
    @inline(__always)
    public func bind(_ index: Int32, int64 value: Int64) throws {
        try check(sqlite3_bind_int64(handle, index, value), db, sql)
    }

    /// Binds a Swift `Int` as an integer.
    @inline(__always)
    public func bind(_ index: Int32, int value: Int) throws {
        try bind(index, int64: Int64(value))
    }

    /// Binds a floating-point number.
    @inline(__always)
    public func bind(_ index: Int32, double value: Double) throws {
        try check(sqlite3_bind_double(handle, index, value), db, sql)
    }

    /// Binds UTF-8 text (SQLite copies it).
    public func bind(_ index: Int32, text value: String) throws {
        var value = value
        // withUTF8 makes the string contiguous once; a native string costs no copy here.
        let rc = value.withUTF8 { p in
            // An empty buffer may have a nil base, which SQLite would bind as NULL.
            guard let base = p.baseAddress, p.count > 0 else {
                return sqlite3_bind_text64(handle, index, "", 0, herald_sqlite_transient(), UInt8(SQLITE_UTF8))
            }
            return base.withMemoryRebound(to: CChar.self, capacity: p.count) {
                sqlite3_bind_text64(handle, index, $0, UInt64(p.count), herald_sqlite_transient(), UInt8(SQLITE_UTF8))
            }
        }
        try check(rc, db, sql)
    }

    /// Binds bytes (SQLite copies them; no Swift allocation).
    @inline(__always)
    public func bind(_ index: Int32, blob value: UnsafeRawBufferPointer) throws {
        // A nil pointer would bind NULL: an empty blob must stay a blob.
        let rc =
            if let base = value.baseAddress, value.count > 0 {
                sqlite3_bind_blob64(handle, index, base, UInt64(value.count), herald_sqlite_transient())
            } else {
                sqlite3_bind_zeroblob(handle, index, 0)
            }
        try check(rc, db, sql)
    }

    /// Binds bytes from an array.
    public func bind(_ index: Int32, blob value: [UInt8]) throws {
        try value.withUnsafeBytes { try bind(index, blob: $0) }
    }
}
