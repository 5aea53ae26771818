/// How a `PostgresConnection` connects and what it sets on every session it opens.
public struct PostgresOptions: Sendable {
    /// Where to connect (no password in it; see `PostgresConnectionString`).
    public var connection: PostgresConnectionString
    /// How long opening a session may take (libpq's `connect_timeout`: whole seconds,
    /// 2 at least; per host tried). A `connect_timeout` in the string wins over this.
    public var connectTimeout: Duration
    /// The server's `statement_timeout` for every statement of the session (nil: the
    /// server's default, normally none). A statement over it fails with 57014.
    public var statementTimeout: Duration?
    /// `application_name` unless the string names one (shown in `pg_stat_activity`).
    public var applicationName: String
    /// How many prepared statements a connection keeps (`DEALLOCATE`d beyond).
    public var statementCacheCapacity: Int

    public init(
        connection: PostgresConnectionString, connectTimeout: Duration = .seconds(5),
        statementTimeout: Duration? = .seconds(30), applicationName: String = "herald",
        statementCacheCapacity: Int = 128
    ) {
        self.connection = connection
        self.connectTimeout = connectTimeout
        self.statementTimeout = statementTimeout
        self.applicationName = applicationName
        self.statementCacheCapacity = max(statementCacheCapacity, 1)
    }

    /// `connect_timeout` in libpq's unit: whole seconds, rounded up, at least 2 (libpq
    /// treats 1 as 2).
    var connectTimeoutSeconds: Int {
        let (s, atto) = connectTimeout.components
        return max(2, Int(s) + (atto > 0 ? 1 : 0))
    }

    /// The statement timeout as PostgreSQL milliseconds (0: none).
    var statementTimeoutMillis: Int64 {
        guard let t = statementTimeout else { return 0 }
        let (s, atto) = t.components
        return max(1, s * 1000 + atto / 1_000_000_000_000_000)
    }
}
