import HeraldCore
import HeraldPostgres
import HeraldStore

/// Streams a channel's subscriptions of a lease's shards in token order (bytea order is
/// SQLite's BLOB order: bytes, then length), on a connection of its own (reopened after a
/// loss), reading only those shards' rows (`statement(shards:bounded:)`). Each statement
/// reads `readAheadBatches` times what a call asks for and keeps the rest for the calls that
/// continue the pass (`ScanReadAhead`); and once a statement's rows are in, the next one of
/// the pass is sent at once (`SentQuery`), so PostgreSQL reads the next rows while the
/// fan-out sends these, and the call that needs them usually finds them arrived. A row read
/// ahead is as the database had it when read (a registration or an unregistration landing
/// between the read and the batch it ends up in is not seen, as if the batch had been read
/// that much earlier); an expiry is checked again against each call's `now`; rows are
/// served for at most a second after they were read (a read sent ahead longer ago is
/// dropped and read again), and a pass that reached its end is read afresh by the next. Not
/// thread-safe: one per thread.
final class PostgresScanner: SubscriptionScan {
    private var connection: PostgresConnection
    private let pool: ConnectionPool
    private var readAhead = ScanReadAhead()
    private let clock = MonotonicClock()
    /// `statement(shards:bounded:)` by its arguments (built once per shard set).
    private var statements: [StatementKey: String] = [:]

    struct StatementKey: Hashable {
        var shards: ShardSet
        var bounded: Bool
    }

    /// The statement sent ahead of time, not read yet (at most one: nothing else runs on
    /// the connection until it is read).
    private var sent: Sent?

    struct Sent {
        var key: ScanReadAhead.Key
        var after: [UInt8]
        var asked: Int
        /// When it was sent (the rows are at least as recent).
        var at: Double
        var query: SentQuery
    }

    /// Batches read per statement.
    static let readAheadBatches = 4

    init(connection: PostgresConnection, pool: ConnectionPool) {
        self.connection = connection
        self.pool = pool
    }

    deinit { connection.close() }

    /// The scanner session's settings: a planner that always reads a page along the key,
    /// in order: with the statistics of a channel loaded moments ago (an empty table as far
    /// as the planner knows), it otherwise picks a bitmap scan of the whole rest of the
    /// channel plus a sort, every page (measured: 83 ms instead of 1.3 ms a page of 1,000 at
    /// 100k tokens). Its statements are planned once (a generic plan): planning the merge of
    /// 48 ranges takes about as long as running it.
    static let sessionSettings =
        "SET enable_bitmapscan = off; SET enable_sort = off; SET enable_seqscan = off; SET plan_cache_mode = force_generic_plan"

    /// A connection of its own with `sessionSettings`.
    static func open(_ pool: ConnectionPool) throws(PostgresError) -> PostgresConnection {
        let c = try pool.openDedicated()
        try c.execute(sessionSettings)
        return c
    }

    func next(
        channelNum: Int64, kind: SubscriptionKind, shards: ShardSet, after: [UInt8], before: [UInt8]?, now: Int64, limit: Int
    ) throws -> TokenRows {
        if shards.isEmpty || limit <= 0 { return [] }
        let key = ScanReadAhead.Key(channelNum: channelNum, kind: kind, shards: shards, before: before)
        var out = TokenRows(capacity: limit)
        var from = after
        let asked = limit * Self.readAheadBatches
        while out.count < limit {
            let (rows, readAfter) = readAhead.take(key, after: from, now: now, at: clock.now(), limit: limit - out.count)
            for r in rows { out.append(r.token) }
            if let last = rows.last { from = last.token }
            guard let readAfter else { break }
            // The statement sent ahead, if it continues this pass; else one read now.
            if try collect() != Sent.Match(key: key, after: readAfter) {
                let fetched = try read(key, after: readAfter, now: now, limit: asked)
                readAhead.filled(key, fetched, asked: asked, at: clock.now())
            }
            if let next = readAhead.nextRead(key) { try send(key, after: next, now: now, limit: asked) }
        }
        return out
    }

    /// Reads the statement sent ahead (if any) and hands its rows to its pass when they
    /// continue it; returns which read it was then, nil otherwise.
    private func collect() throws -> Sent.Match? {
        guard let s = sent else { return nil }
        sent = nil
        let rows = try PostgresStore.translating { try connection.receive(s.query).map(Self.row) }
        guard readAhead.continues(s.key, after: s.after, readAt: s.at, at: clock.now()) else { return nil }
        readAhead.filled(s.key, rows, asked: s.asked, at: s.at)
        return Sent.Match(key: s.key, after: s.after)
    }

    private func send(_ key: ScanReadAhead.Key, after: [UInt8], now: Int64, limit: Int) throws {
        let at = clock.now()
        try PostgresStore.translating {
            let (sql, args) = try prepare(key, after: after, now: now, limit: limit)
            sent = Sent(key: key, after: after, asked: limit, at: at, query: try connection.send(sql, args))
        }
    }

    private func read(_ key: ScanReadAhead.Key, after: [UInt8], now: Int64, limit: Int) throws -> [ScanReadAhead.Row] {
        try PostgresStore.translating {
            let (sql, args) = try prepare(key, after: after, now: now, limit: limit)
            return try connection.query(sql, args).map(Self.row)
        }
    }

    /// The statement and arguments of a read, on a connection that is up (reopened, and
    /// what was read ahead forgotten, after a loss).
    private func prepare(_ key: ScanReadAhead.Key, after: [UInt8], now: Int64, limit: Int) throws(PostgresError) -> (
        String, [PostgresValue]
    ) {
        if !connection.isConnected {
            connection = try Self.open(pool)
            readAhead.reset()
            sent = nil
        }
        var args: [PostgresValue] = [.int8(key.channelNum), .int8(key.kind.storedCode), .bytea(after), .int8(now), .int(limit)]
        if let before = key.before { args.append(.bytea(before)) }
        let statementKey = StatementKey(shards: key.shards, bounded: key.before != nil)
        let sql = statements[statementKey] ?? Self.statement(shards: key.shards, bounded: statementKey.bounded)
        if statements.count >= 64 { statements.removeAll() }
        statements[statementKey] = sql
        return (sql, args)
    }

    private static func row(_ r: PostgresRow) throws(PostgresError) -> ScanReadAhead.Row {
        ScanReadAhead.Row(
            token: try r.bytea("token"), registeredAtMillis: try r.int64("registered_at_ms"), expiresAt: r["expires_at"]?.int64Value)
    }
}

extension PostgresScanner.Sent {
    /// Which read a statement sent ahead was: the pass and where it started.
    struct Match: Equatable {
        var key: ScanReadAhead.Key
        var after: [UInt8]
    }
}
