import CSQLite

// Per-connection settings, applied once when a connection opens.
extension Database {
    /// Settings every connection gets: hardening, foreign keys, memory.
    static func configureCommon(_ connection: SQLiteConnection, _ options: DatabaseOptions, cacheKiB: Int) throws {
        let db = try connection.db()
        // Defensive: no writable_schema, no journal_mode=OFF, no corrupting the file from SQL.
        try check(herald_sqlite_defensive(db, 1), db)
        // Untrusted schema: functions with side effects cannot run from views or triggers.
        try check(herald_sqlite_db_config_int(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0), db)
        try connection.execute(
            """
            PRAGMA foreign_keys = ON;
            PRAGMA temp_store = MEMORY;
            PRAGMA cache_size = -\(max(cacheKiB, 0));
            PRAGMA mmap_size = \(max(options.mmapSize, 0));
            """)
    }

    /// The writer's settings: WAL, durability, checkpoints.
    static func configureWriter(_ connection: SQLiteConnection, _ options: DatabaseOptions) throws {
        try configureCommon(connection, options, cacheKiB: options.cacheSizeKiB)
        // journal_mode answers with the mode it ended in: a file system without shared
        // memory, or a read-only file, leaves it unchanged.
        let statement = try connection.prepare("PRAGMA journal_mode = WAL")
        let mode = try statement.step() ? statement.text(0).lowercased() : ""
        guard mode == "wal" else { throw DatabaseError.walUnavailable(journalMode: mode) }
        try connection.execute(
            """
            PRAGMA synchronous = \(options.synchronous.pragmaValue);
            PRAGMA journal_size_limit = \(options.journalSizeLimit);
            PRAGMA wal_autocheckpoint = \(options.walAutocheckpointPages);
            """)
    }

    /// A read-only connection on `path` with the common settings.
    static func openReader(path: String, options: DatabaseOptions) throws -> SQLiteConnection {
        let connection = try SQLiteConnection(
            path: path, readOnly: true, busyTimeout: options.busyTimeout,
            statementCacheCapacity: options.statementCacheCapacity)
        try configureCommon(connection, options, cacheKiB: options.readerCacheSizeKiB)
        return connection
    }
}
