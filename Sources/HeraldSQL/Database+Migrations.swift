import HeraldCore

extension Database {
    static let createMigrationsTable = """
        CREATE TABLE IF NOT EXISTS schema_migrations(
            version INTEGER PRIMARY KEY,
            name TEXT NOT NULL,
            applied_at_ms INTEGER NOT NULL
        )
        """

    /// Applies the migrations the file has not seen, in version order, each in its own
    /// transaction together with its `schema_migrations` row. Runs on the writer thread
    /// with no other write interleaved.
    ///
    /// A version missing below the newest applied one is applied too (migrations from
    /// parallel branches).
    /// - Returns: the versions applied now, in order (empty when up to date).
    /// - Throws: `DatabaseError.schemaNewerThanBinary` (nothing applied) when the file
    ///   records a version above the newest in `migrations`;
    ///   `DatabaseError.invalidMigrations` for a duplicate or non-positive version;
    ///   `SQLiteError` from a failing migration (it is rolled back; the earlier ones stay).
    /// - Thread: as `write` (blocks).
    @discardableResult
    public func migrate(_ migrations: [Migration], clock: any WallClock = SystemClock()) throws -> [Int] {
        let ordered = migrations.sorted { $0.version < $1.version }
        if let bad = ordered.first(where: { $0.version <= 0 }) {
            throw DatabaseError.invalidMigrations("version \(bad.version) of \"\(bad.name)\" is not positive")
        }
        for (a, b) in zip(ordered, ordered.dropFirst()) where a.version == b.version {
            throw DatabaseError.invalidMigrations("version \(a.version) is used by \"\(a.name)\" and \"\(b.name)\"")
        }
        let newestKnown = ordered.last?.version ?? 0
        return try writeUnbatched { connection in
            try connection.execute(Self.createMigrationsTable)
            let applied = Set(try connection.query("SELECT version FROM schema_migrations").compactMap { $0[0].intValue })
            if let newest = applied.max(), newest > newestKnown {
                throw DatabaseError.schemaNewerThanBinary(databaseVersion: newest, newestKnownVersion: newestKnown)
            }
            var done: [Int] = []
            for migration in ordered where !applied.contains(migration.version) {
                try connection.transaction(.immediate) {
                    try connection.execute(migration.sql)
                    try connection.run(
                        "INSERT INTO schema_migrations(version, name, applied_at_ms) VALUES (?, ?, ?)",
                        [.int(migration.version), .text(migration.name), .integer(clock.nowMillis())])
                }
                done.append(migration.version)
            }
            return done
        }
    }

    /// The versions recorded in `schema_migrations`, ascending (empty for a new file).
    /// - Throws: `DatabaseError.closed`, `SQLiteError`.
    /// - Thread: any but the cooperative pool.
    public func appliedMigrations() throws -> [Int] {
        try read { connection in
            let exists = try connection.queryValue(
                "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'schema_migrations'")
            guard exists != nil else { return [] }
            return try connection.query("SELECT version FROM schema_migrations ORDER BY version")
                .compactMap { $0[0].intValue }
        }
    }
}
