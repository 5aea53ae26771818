import HeraldPostgres
import HeraldStore

/// Leases per (channel, shard) on the `leases` table, as `LeaseTable` (HeraldPostgres)
/// keeps them: claimed with `FOR UPDATE SKIP LOCKED`, stamped with this worker's id and the
/// next attempt number, expiring by the database's clock, renewed by every fenced write.
extension PostgresStore {
    var leaseMillis: Int64 {
        let (s, atto) = leaseDuration.components
        return s * 1000 + atto / 1_000_000_000_000_000
    }

    /// The shards of `channelNum` this worker may send now: those it still holds (renewed)
    /// and every free or expired one (claimed). Nil when another worker holds them all.
    public func acquireLease(channelNum: Int64) throws -> Lease? { try acquire(channelNum: channelNum, share: false) }

    /// As `acquireLease`, claiming free shards only up to this worker's share,
    /// `ceil(shards / live workers)` (`workers`), so that the workers alive when an event
    /// comes split its fan-out. What the fan-out asks for.
    public func claimShare(channelNum: Int64) throws -> Lease? { try acquire(channelNum: channelNum, share: true) }

    func acquire(channelNum: Int64, share: Bool) throws -> Lease? {
        let mine = held.withLock { $0[channelNum] ?? [:] }
        let rows = try write { c -> [PostgresRow] in
            try c.run(
                "INSERT INTO leases (channel, shard) SELECT $1, s FROM generate_series(0, $2 - 1) AS s ON CONFLICT DO NOTHING",
                [.int8(channelNum), .int(Shards.count)])
            try beat(c)
            var rows: [PostgresRow] = []
            if !mine.isEmpty { rows += try renew(c, channelNum: channelNum, mine) }
            var want = Int64(Shards.count)
            if share {
                let live = max(1, try c.queryValue("SELECT count(*) FROM workers WHERE expires_at > clock_timestamp()")?.int64Value ?? 1)
                want = (Int64(Shards.count) + live - 1) / live - Int64(rows.count)
            }
            guard want > 0 else { return rows }
            rows += try c.query(
                """
                WITH free AS (
                    SELECT channel, shard FROM leases
                    WHERE channel = $1 AND expires_at <= clock_timestamp()
                    ORDER BY shard
                    LIMIT $4
                    FOR UPDATE SKIP LOCKED)
                UPDATE leases AS l
                SET owner = $2, attempt = l.attempt + 1, expires_at = clock_timestamp() + $3::int8 * interval '1 millisecond'
                FROM free WHERE l.channel = free.channel AND l.shard = free.shard
                RETURNING l.shard, l.attempt, l.expires_at, \(Self.leftMillis)
                """, [.int8(channelNum), .text(workerID.rawValue), .int8(leaseMillis), .int8(want)])
            return rows
        }
        return try lease(channelNum: channelNum, rows)
    }

    /// What is left of a lease row by the database's clock, in ms (a `RETURNING` column).
    static let leftMillis = "(extract(epoch FROM l.expires_at - clock_timestamp()) * 1000)::int8 AS left_ms"

    /// The lease the renewed or claimed `rows` make (nil: none), recorded as this worker's
    /// holding of the channel.
    func lease(channelNum: Int64, _ rows: [PostgresRow]) throws -> Lease? {
        var granted: [Int64: Int64] = [:]
        var expires = Int64.max
        var left = Int64.max
        for r in rows {
            granted[try r.int64("shard")] = try r.int64("attempt")
            expires = min(expires, try r.timestamp("expires_at") / 1000)
            left = min(left, try r.int64("left_ms"))
        }
        held.withLock { $0[channelNum] = granted.isEmpty ? nil : granted }
        guard !granted.isEmpty else { return nil }
        return Lease(
            channelNum: channelNum, shards: ShardSet(granted.keys.map { Int($0) }), expiresAtMillis: expires,
            validFor: Double(max(0, left)) / 1000)
    }

    /// Renews the shards of `lease` this worker still holds; claims nothing. Nil: none.
    public func renewLease(_ lease: Lease) throws -> Lease? {
        let mine = held.withLock { $0[lease.channelNum] ?? [:] }.filter { lease.shards.contains(Int($0.key)) }
        guard !mine.isEmpty else { return nil }
        let rows = try write { c in try renew(c, channelNum: lease.channelNum, mine) }
        return try self.lease(channelNum: lease.channelNum, rows)
    }

    /// Extends the holdings `attempts` (shard → attempt) of this worker on `channelNum`,
    /// those still its own (nobody claimed them since); the rows stay locked until the
    /// transaction ends, so no claim takes them meanwhile. Returns the rows renewed.
    func renew(_ c: PostgresConnection, channelNum: Int64, _ attempts: [Int64: Int64]) throws(PostgresError) -> [PostgresRow] {
        let pairs = attempts.sorted { $0.key < $1.key }
        return try c.query(
            """
            UPDATE leases AS l SET expires_at = clock_timestamp() + $5::int8 * interval '1 millisecond'
            FROM unnest($3::int8[], $4::int8[]) AS h(shard, attempt)
            WHERE l.channel = $1 AND l.shard = h.shard AND l.owner = $2 AND l.attempt = h.attempt
            RETURNING l.shard, l.attempt, l.expires_at, \(Self.leftMillis)
            """,
            [
                .int8(channelNum), .text(workerID.rawValue), .array(pairs.map { .int8($0.key) }), .array(pairs.map { .int8($0.value) }),
                .int8(leaseMillis),
            ])
    }

    /// The shards of `shards` on the channel of `eventID`, renewed and locked for the rest of
    /// the transaction: the fence of every progress write. Empty: the event is gone. Throws
    /// `LeaseLost` when this worker no longer holds (owner, attempt) of every one of them:
    /// the write changes nothing (the new holder resumes from the last checkpoint) and the
    /// fan-out gives the channel up.
    func fence(_ c: PostgresConnection, eventID: String, shards: ShardSet) throws -> [Int64] {
        guard let channel = try c.queryValue("SELECT channel FROM events WHERE id = $1", [.text(eventID)])?.int64Value else {
            return []
        }
        let attempts = held.withLock { $0[channel] ?? [:] }.filter { shards.contains(Int($0.key)) }
        guard attempts.count == shards.count else { throw LeaseLost(channelNum: channel) }
        let mine = try renew(c, channelNum: channel, attempts).map { r throws(PostgresError) in try r.int64("shard") }.sorted()
        guard mine.count == attempts.count else { throw LeaseLost(channelNum: channel) }
        return mine
    }

    /// Gives `lease`'s shards back: claimable by any worker at once.
    public func releaseLease(_ lease: Lease) {
        let shards = (0..<Shards.count).filter(lease.shards.contains).map { PostgresValue.int($0) }
        guard !shards.isEmpty else { return }
        _ = try? write { c in
            try c.run(
                "UPDATE leases SET owner = NULL, expires_at = '-infinity' WHERE channel = $1 AND owner = $2 AND shard = ANY($3::int8[])",
                [.int8(lease.channelNum), .text(workerID.rawValue), .array(shards)])
        }
        held.withLock { h in
            h[lease.channelNum] = h[lease.channelNum]?.filter { !lease.shards.contains(Int($0.key)) }
            if h[lease.channelNum]?.isEmpty == true { h[lease.channelNum] = nil }
        }
    }

    /// Hands every lease of this worker back (shutdown).
    func releaseAllLeases() {
        _ = try? write { c in
            try c.run("UPDATE leases SET owner = NULL, expires_at = '-infinity' WHERE owner = $1", [.text(workerID.rawValue)])
            try c.run("DELETE FROM workers WHERE id = $1", [.text(workerID.rawValue)])
        }
        held.withLock { $0.removeAll() }
    }
}
