/// One schema change: applied once, in version order, recorded in `schema_migrations`.
public struct Migration: Sendable, Hashable {
    /// Positive and unique; applied in increasing order.
    public let version: Int
    /// A short name (`"subscriptions"`), recorded with the version.
    public let name: String
    /// One or more statements, run in one transaction with the version's row. A
    /// `PRAGMA foreign_keys` in it has no effect (SQLite ignores it inside a transaction).
    public let sql: String

    public init(version: Int, name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
    }
}
