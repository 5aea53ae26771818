/// The lease primitive on the `leases` table (Migrations/postgres/0001_initial.sql): claim
/// free or expired (channel, shard) leases with `FOR UPDATE SKIP LOCKED`, renew, release,
/// and fence writes by (owner, attempt). Expiry is by the database's clock
/// (`clock_timestamp()`), never the worker's: workers' clocks may disagree.
///
/// A value; every method runs on the connection given (its thread).
public struct LeaseTable: Sendable {
    /// How long a claim or renewal holds (`HERALD_LEASE_SECONDS`, default 15 s).
    public var duration: Duration

    public init(duration: Duration = .seconds(15)) { self.duration = duration }

    var durationMillis: Int64 {
        let (s, atto) = duration.components
        return s * 1000 + atto / 1_000_000_000_000_000
    }

    /// Creates the free lease rows of `channel`'s shards `0..<count` (existing rows are
    /// kept). - Throws: `PostgresError`.
    public func ensureShards(channel: Int64, count: Int, on conn: PostgresConnection) throws(PostgresError) {
        try conn.run(
            "INSERT INTO leases (channel, shard) SELECT $1, s FROM generate_series(0, $2 - 1) AS s ON CONFLICT DO NOTHING",
            [.int8(channel), .int(count)])
    }

    /// Claims up to `limit` leases that are free or expired, for `owner`: each gets
    /// `attempt + 1` and a new expiry. Rows another transaction is claiming at the same
    /// moment are skipped (`SKIP LOCKED`), never waited for and never both granted.
    /// - Returns: the leases granted, by (channel, shard).
    /// - Throws: `PostgresError`.
    public func claim(owner: WorkerID, limit: Int, on conn: PostgresConnection) throws(PostgresError) -> [ShardLease] {
        let sent = ContinuousClock.now
        let rows = try conn.query(
            """
            WITH free AS (
                SELECT channel, shard FROM leases
                WHERE expires_at <= clock_timestamp()
                ORDER BY expires_at, channel, shard
                LIMIT $2
                FOR UPDATE SKIP LOCKED)
            UPDATE leases AS l
            SET owner = $1, attempt = l.attempt + 1, expires_at = clock_timestamp() + $3::int8 * interval '1 millisecond'
            FROM free WHERE l.channel = free.channel AND l.shard = free.shard
            RETURNING l.channel, l.shard, l.attempt, l.expires_at, clock_timestamp() AS now
            """, [.text(owner.rawValue), .int(limit), .int8(durationMillis)])
        return try rows.map { r throws(PostgresError) in try lease(r, owner: owner, sent: sent) }
            .sorted { ($0.channel, $0.shard) < ($1.channel, $1.shard) }
    }

    /// Extends `lease` by `duration` from now, if it is still this holding (same owner and
    /// attempt: nobody claimed it since, even if it expired meanwhile).
    /// - Returns: the renewed lease, or nil when it was lost (stop sending for the shard).
    /// - Throws: `PostgresError`.
    public func renew(_ lease: ShardLease, on conn: PostgresConnection) throws(PostgresError) -> ShardLease? {
        let sent = ContinuousClock.now
        let row = try conn.queryOne(
            """
            UPDATE leases SET expires_at = clock_timestamp() + $5::int8 * interval '1 millisecond'
            WHERE channel = $1 AND shard = $2 AND owner = $3 AND attempt = $4
            RETURNING channel, shard, attempt, expires_at, clock_timestamp() AS now
            """,
            [
                .int8(lease.channel), .int8(lease.shard), .text(lease.owner.rawValue), .int8(lease.attempt),
                .int8(durationMillis),
            ])
        return try row.map { r throws(PostgresError) in try self.lease(r, owner: lease.owner, sent: sent) }
    }

    /// Hands every lease of `owner` back at once (SIGTERM): they are claimable immediately.
    /// - Returns: how many were released. - Throws: `PostgresError`.
    @discardableResult
    public func release(owner: WorkerID, on conn: PostgresConnection) throws(PostgresError) -> Int {
        try conn.run(
            "UPDATE leases SET owner = NULL, expires_at = '-infinity' WHERE owner = $1", [.text(owner.rawValue)])
    }

    /// Runs `body` in a transaction only while `lease` is still this holding: the lease row
    /// is locked first (`FOR NO KEY UPDATE`, so a concurrent claim skips it and cannot take
    /// it until the write has committed), then checked by (owner, attempt).
    /// - Returns: what `body` returns, or nil (and nothing written) when the lease was lost.
    /// - Throws: what `body` throws, or `PostgresError`.
    public func fenced<T>(_ lease: ShardLease, on conn: PostgresConnection, _ body: (PostgresConnection) throws -> T)
        throws -> T?
    {
        try conn.transaction { c in
            let held = try c.queryOne(
                """
                SELECT 1::int8 AS held FROM leases
                WHERE channel = $1 AND shard = $2 AND owner = $3 AND attempt = $4
                FOR NO KEY UPDATE
                """, [.int8(lease.channel), .int8(lease.shard), .text(lease.owner.rawValue), .int8(lease.attempt)])
            guard held != nil else { return nil }
            return try body(c)
        }
    }

    /// The fenced write of a shard's progress for one event, which also renews the lease:
    /// one statement, applied only while (owner, attempt) still holds the lease.
    /// - Returns: the renewed lease, or nil when the lease was lost (nothing written).
    /// - Throws: `PostgresError`.
    public func checkpoint(
        _ lease: ShardLease, event: String, cursor: [UInt8]?, sent: Int64, failed: Int64, done: Bool,
        on conn: PostgresConnection
    ) throws(PostgresError) -> ShardLease? {
        let start = ContinuousClock.now
        let row = try conn.queryOne(
            """
            WITH held AS (
                UPDATE leases SET expires_at = clock_timestamp() + $5::int8 * interval '1 millisecond'
                WHERE channel = $1 AND shard = $2 AND owner = $3 AND attempt = $4
                RETURNING channel, shard, attempt, expires_at, clock_timestamp() AS now),
            written AS (
                INSERT INTO checkpoints (event_id, shard, cursor, sent, failed, done)
                SELECT $6, held.shard, $7, $8, $9, $10 FROM held
                ON CONFLICT (event_id, shard) DO UPDATE
                SET cursor = EXCLUDED.cursor, sent = EXCLUDED.sent, failed = EXCLUDED.failed, done = EXCLUDED.done
                RETURNING 1)
            SELECT held.*, (SELECT count(*) FROM written) AS written FROM held
            """,
            [
                .int8(lease.channel), .int8(lease.shard), .text(lease.owner.rawValue), .int8(lease.attempt),
                .int8(durationMillis), .text(event), cursor.map(PostgresValue.bytea) ?? .null, .int8(sent), .int8(failed),
                .bool(done),
            ])
        return try row.map { r throws(PostgresError) in try self.lease(r, owner: lease.owner, sent: start) }
    }

    func lease(_ r: PostgresRow, owner: WorkerID, sent: ContinuousClock.Instant) throws(PostgresError) -> ShardLease {
        let expires = try r.timestamp("expires_at")
        let now = try r.timestamp("now")
        return ShardLease(
            channel: try r.int64("channel"), shard: try r.int64("shard"), owner: owner, attempt: try r.int64("attempt"),
            expiresAtMicros: expires, localDeadline: sent + .microseconds(max(0, expires - now)))
    }
}
