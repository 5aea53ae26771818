import HeraldPostgres
import HeraldStore

/// One chunk of a registration batch (docs/performance.md, "Batch ingest on PostgreSQL"):
/// first, optimistically, binary `COPY` straight into `subscriptions` — the fastest path
/// measured, and what a first import of new tokens is. `COPY` cannot skip a token that is
/// already registered: it fails on the key (23505) at the first one, so it runs in a
/// savepoint, and on that failure the savepoint is rolled back (nothing of the chunk stays)
/// and the chunk goes through the upsert instead, which refreshes the registered tokens'
/// registration time and inserts the rest. Either way every row is written once and
/// `created` / `joined` count exactly the rows this batch inserted: after a successful
/// COPY every row is new; after the upsert `xmax = 0` says which. Once a chunk of a batch
/// met a registered token the later chunks go straight to the upsert (a batch of
/// re-registrations pays for one failed COPY, not one per chunk).
extension PostgresStore {
    /// How a registration batch writes its rows. `copyNew` is what Herald uses; `upsert`
    /// (every row through `INSERT … ON CONFLICT`, the path before it) is kept so that
    /// `Benchmarks/pgstore.sh` can measure the two side by side.
    public enum IngestPath: String, Sendable, CaseIterable {
        case copyNew = "copy-new"
        case upsert
    }

    /// A row of a batch as stored.
    struct IngestRow {
        var shard: Int64
        var kind: Int64
        var token: [UInt8]
        var expiresAt: Int64?
    }

    /// Writes `rows` (one per (kind, token)) of channel `channel` registered at `nowMs`;
    /// returns how many were new and the new activity tokens. In the caller's transaction.
    /// `path` becomes `.upsert` once a COPY met a registered token.
    static func ingest(_ c: PostgresConnection, channel: Int64, nowMs: Int64, _ rows: [IngestRow], path: inout IngestPath) throws -> (
        created: Int, joined: [[UInt8]]
    ) {
        if path == .upsert { return try upsert(c, channel: channel, nowMs: nowMs, rows) }
        do {
            try c.transaction { c in
                _ = try c.copyIn(
                    "COPY subscriptions (channel, shard, kind, token, registered_at_ms, expires_at) FROM STDIN (FORMAT binary)"
                ) { w in
                    for r in rows {
                        try w.append([.int8(channel), .int8(r.shard), .int8(r.kind), .bytea(r.token), .int8(nowMs), r.expiresAt.parameter])
                    }
                }
            }
            let joined = rows.filter { $0.kind == SubscriptionKind.activity.storedCode }.map(\.token)
            return (rows.count, joined)
        } catch let e as PostgresError where e.sqlState == .uniqueViolation {
            // A token of the chunk is registered already: the upsert decides each one.
            path = .upsert
            return try upsert(c, channel: channel, nowMs: nowMs, rows)
        }
    }

    /// `INSERT … SELECT FROM unnest(…) ON CONFLICT DO UPDATE` (refreshes the registration
    /// time of a registered token); `created` from `xmax = 0`.
    static func upsert(_ c: PostgresConnection, channel: Int64, nowMs: Int64, _ rows: [IngestRow]) throws -> (
        created: Int, joined: [[UInt8]]
    ) {
        guard !rows.isEmpty else { return (0, []) }
        var created = 0
        var joined: [[UInt8]] = []
        for r in try c.query(
            """
            WITH up AS (
                INSERT INTO subscriptions (channel, shard, kind, token, registered_at_ms, expires_at)
                SELECT $1, u.shard, u.kind, u.token, $2, u.expires_at
                FROM unnest($3::int8[], $4::int8[], $5::bytea[], $6::int8[]) AS u(shard, kind, token, expires_at)
                ON CONFLICT (channel, kind, shard, token) DO UPDATE
                SET registered_at_ms = EXCLUDED.registered_at_ms, expires_at = EXCLUDED.expires_at
                RETURNING kind, token, (xmax = 0) AS created)
            SELECT kind, token FROM up WHERE created
            """,
            [
                .int8(channel), .int8(nowMs), .array(rows.map { .int8($0.shard) }), .array(rows.map { .int8($0.kind) }),
                .array(rows.map { .bytea($0.token) }), .array(rows.map { $0.expiresAt.parameter }),
            ])
        {
            created += 1
            if try r.int64("kind") == SubscriptionKind.activity.storedCode { joined.append(try r.bytea("token")) }
        }
        return (created, joined)
    }
}
