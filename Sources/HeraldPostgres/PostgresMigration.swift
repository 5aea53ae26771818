/// One PostgreSQL schema change: applied once, in version order, recorded in
/// `schema_migrations` in the same transaction as its SQL.
public struct PostgresMigration: Sendable, Hashable {
    /// Positive and unique; applied in increasing order.
    public let version: Int
    /// A short name (`"initial"`), recorded with the version.
    public let name: String
    /// One or more statements (run through the simple protocol).
    public let sql: String

    public init(version: Int, name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
    }

    /// Herald's PostgreSQL schema: `Migrations/postgres/*.sql`, embedded at build time.
    public static let herald: [PostgresMigration] = EmbeddedMigrations.all.map {
        PostgresMigration(version: $0.version, name: $0.name, sql: $0.sql)
    }
}

/// Why `migrate` refused to run.
public enum PostgresMigrationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The database records a version this binary does not know: it was migrated by a
    /// newer Herald. Nothing was applied.
    case schemaNewerThanBinary(databaseVersion: Int, newestKnownVersion: Int)
    /// Two migrations share a version, or one is not positive.
    case invalidMigrations(String)

    public var description: String {
        switch self {
        case .schemaNewerThanBinary(let db, let known):
            "the database schema is version \(db), newer than this binary's \(known): upgrade Herald"
        case .invalidMigrations(let why): "invalid migrations: \(why)"
        }
    }
}
