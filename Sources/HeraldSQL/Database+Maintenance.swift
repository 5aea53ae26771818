import CSQLite

extension Database {
    /// Copies the database to `path` with SQLite's online backup API, from one read
    /// snapshot: writers keep going meanwhile (WAL). The copy is written beside `path`,
    /// made 0600, and renamed over `path` only when complete.
    /// - Throws: `SQLiteError` (e.g. disk full at the destination), `DatabaseError.fileSystem`.
    /// - Thread: any but the cooperative pool; takes as long as copying the file.
    public func backup(to path: String) throws {
        let source = try readers.makeConnection()
        defer { source.close() }
        let partial = path + ".partial"
        try FileMode.createOwnerOnlyFile(partial)
        do {
            let destination = try SQLiteConnection(path: partial, create: false, busyTimeout: options.busyTimeout)
            defer { destination.close() }
            try Self.copy(from: source.db(), to: destination.db())
        } catch {
            FileMode.remove(partial)
            throw error
        }
        try FileMode.replace(path, with: partial)
    }

    /// One `sqlite3_backup_step(-1)`: the whole file under one read transaction, so
    /// concurrent commits cannot restart it.
    private static func copy(from source: OpaquePointer, to destination: OpaquePointer) throws {
        guard let backup = sqlite3_backup_init(destination, "main", source, "main") else {
            throw SQLiteError(rc: sqlite3_errcode(destination), db: destination, sql: nil)
        }
        let stepped = sqlite3_backup_step(backup, -1)
        let finished = sqlite3_backup_finish(backup)  // frees `backup` whatever happened
        if stepped != SQLITE_DONE { try check(stepped, destination) }
        try check(finished, destination)
    }

    /// SQLite's `PRAGMA integrity_check`: "ok" when the file is sound, else its findings,
    /// one per line.
    /// - Throws: `DatabaseError.closed`, `SQLiteError`.
    /// - Thread: any but the cooperative pool; reads the whole file.
    public func integrityCheck() throws -> String {
        try read { connection in
            try connection.query("PRAGMA integrity_check").map { $0[0].textValue ?? "" }.joined(separator: "\n")
        }
    }
}
