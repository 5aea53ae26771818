extension PostgresConnection {
    /// Applies the migrations the database has not seen, in version order, each in its own
    /// transaction together with its `schema_migrations` row. Several workers starting at
    /// once are serialized by a session advisory lock: one applies, the others then find
    /// nothing to do.
    /// - Returns: the versions applied now (empty when up to date).
    /// - Throws: `PostgresMigrationError.schemaNewerThanBinary` (nothing applied) when the
    ///   database records a version above the newest in `migrations`; `.invalidMigrations`;
    ///   `PostgresError` from a failing migration (rolled back; earlier ones stay).
    /// - Thread: the connection's thread.
    @discardableResult
    public func migrate(_ migrations: [PostgresMigration] = PostgresMigration.herald) throws -> [Int] {
        let ordered = migrations.sorted { $0.version < $1.version }
        if let bad = ordered.first(where: { $0.version <= 0 }) {
            throw PostgresMigrationError.invalidMigrations("version \(bad.version) of \"\(bad.name)\" is not positive")
        }
        for (a, b) in zip(ordered, ordered.dropFirst()) where a.version == b.version {
            throw PostgresMigrationError.invalidMigrations("version \(a.version) is used by \"\(a.name)\" and \"\(b.name)\"")
        }
        let newestKnown = ordered.last?.version ?? 0
        try run("SELECT pg_advisory_lock($1)", [.int8(Self.migrationLockKey)])
        defer { _ = try? run("SELECT pg_advisory_unlock($1)", [.int8(Self.migrationLockKey)]) }
        try command(
            """
            CREATE TABLE IF NOT EXISTS schema_migrations (
                version    bigint PRIMARY KEY,
                name       text NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT now()
            )
            """)
        let applied = Set(try appliedMigrations())
        if let newest = applied.max(), newest > newestKnown {
            throw PostgresMigrationError.schemaNewerThanBinary(databaseVersion: newest, newestKnownVersion: newestKnown)
        }
        var done: [Int] = []
        for migration in ordered where !applied.contains(migration.version) {
            try transaction { c in
                try c.command(migration.sql)
                try c.run(
                    "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
                    [.int(migration.version), .text(migration.name)])
            }
            done.append(migration.version)
        }
        return done
    }

    /// The versions recorded in `schema_migrations`, ascending (empty for a new database).
    /// - Throws: `PostgresError`.
    /// - Thread: the connection's thread.
    public func appliedMigrations() throws(PostgresError) -> [Int] {
        guard try queryValue("SELECT to_regclass('schema_migrations') IS NOT NULL") == true else { return [] }
        return try query("SELECT version FROM schema_migrations ORDER BY version").compactMap { $0.values[0].intValue }
    }

    /// The advisory lock key of `migrate` ("herald" in ASCII).
    static let migrationLockKey: Int64 = 0x6865_7261_6c64
}
