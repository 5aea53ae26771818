/// How a transaction takes its lock (SQLite's BEGIN variants).
public enum TransactionKind: Sendable {
    /// Lock on first use: reads see one snapshot from their first statement on.
    case deferred
    /// Take the write lock at BEGIN, so the transaction cannot fail later with BUSY for
    /// lack of it.
    case immediate
    /// Like immediate; in WAL mode the same.
    case exclusive

    var beginSQL: String {
        switch self {
        case .deferred: "BEGIN DEFERRED"
        case .immediate: "BEGIN IMMEDIATE"
        case .exclusive: "BEGIN EXCLUSIVE"
        }
    }
}

extension SQLiteConnection {
    /// Runs `body` in a transaction: COMMIT when it returns, ROLLBACK when it throws.
    ///
    /// Inside an open transaction (a `Database.write` job runs in one) this becomes a
    /// savepoint, so code that wants atomicity works both alone and inside a job.
    /// - Throws: what `body` throws (after rolling back), or `SQLiteError` from BEGIN or
    ///   COMMIT (after rolling back).
    /// - Thread: the connection's thread.
    public func transaction<T>(_ kind: TransactionKind = .immediate, _ body: () throws -> T) throws -> T {
        if isInTransaction {
            nestedTransactionDepth += 1
            defer { nestedTransactionDepth -= 1 }
            return try savepoint("herald_nested_\(nestedTransactionDepth)", body)
        }
        try cached(kind.beginSQL).run()
        let result: T
        do {
            result = try body()
            try cached("COMMIT").run()
        } catch {
            rollbackIfNeeded()
            throw error
        }
        return result
    }

    /// Runs `body` inside `SAVEPOINT name`: RELEASE when it returns, ROLLBACK TO (then
    /// RELEASE) when it throws. Outside a transaction, releasing commits.
    /// - Throws: what `body` throws (after rolling back to the savepoint), or `SQLiteError`.
    /// - Thread: the connection's thread.
    public func savepoint<T>(_ name: String, _ body: () throws -> T) throws -> T {
        let quoted = Self.quoteIdentifier(name)
        try cached("SAVEPOINT \(quoted)").run()
        do {
            let result = try body()
            try cached("RELEASE \(quoted)").run()
            return result
        } catch {
            // Both may fail when SQLite already rolled the whole transaction back (disk
            // full, I/O error): then there is nothing left to undo.
            _ = try? cached("ROLLBACK TO \(quoted)").run()
            _ = try? cached("RELEASE \(quoted)").run()
            throw error
        }
    }

    /// Rolls back the open transaction, if any; errors are ignored (there is nothing
    /// better to do with them on an error path).
    func rollbackIfNeeded() {
        guard isInTransaction else { return }
        _ = try? cached("ROLLBACK").run()
    }

    /// `name` as a double-quoted SQL identifier.
    static func quoteIdentifier(_ name: String) -> String {
        var out = "\""
        for c in name {
            if c == "\"" { out.append("\"") }
            out.append(c)
        }
        out.append("\"")
        return out
    }
}
