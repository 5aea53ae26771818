import HeraldPostgres
import HeraldStore

extension PostgresStore {
    /// The expiry of a registration (as SQLite's `Store`: an activity token lives at most
    /// `Store.activityLifetime`).
    static func expiry(_ kind: SubscriptionKind, requested: Int64?, now: Int64) -> Int64? {
        switch kind {
        case .activity: min(requested ?? Int64.max, now + Store.activityLifetime)
        case .pushToStart: requested
        }
    }

    static func openChannel(_ c: PostgresConnection, _ id: String) throws -> Channel {
        guard let ch = try loadChannel(c, id: id, lock: .keyShare) else { throw StoreError.channelNotFound(id) }
        guard ch.isOpen else { throw StoreError.channelClosed(id) }
        return ch
    }

    static let bothKinds = PostgresValue.array(SubscriptionKind.allCases.map { .int8($0.storedCode) })

    /// Removes `token` of either kind from channel `channelNum` (its key: the shard is the
    /// token's); returns how many rows went.
    @discardableResult
    static func delete(_ c: PostgresConnection, channelNum: Int64, token: [UInt8]) throws(PostgresError) -> Int {
        try c.run(
            "DELETE FROM subscriptions WHERE channel = $1 AND kind = ANY($2::int8[]) AND shard = $3 AND token = $4",
            [.int8(channelNum), Self.bothKinds, .int(Shards.shard(of: token)), .bytea(token)])
    }

    /// The arguments $1-$5 of a prune: the channel, then per item its kind, token, 410 time
    /// and the token's shard (the key).
    static func pruneArguments(
        _ channelNum: Int64, _ items: [(kind: SubscriptionKind, token: [UInt8], beforeMillis: Int64)]
    ) -> [PostgresValue] {
        [
            .int8(channelNum), .array(items.map { .int8($0.kind.storedCode) }), .array(items.map { .bytea($0.token) }),
            .array(items.map { .int8($0.beforeMillis) }), .array(items.map { .int(Shards.shard(of: $0.token)) }),
        ]
    }

    /// Registers `token` (idempotent: a repeat refreshes its registration time, which is what
    /// protects it from a 410 APNs stamped earlier). With `replaces`, the old token is
    /// removed in the same transaction (token rotation).
    public func register(
        channelID: String, token: [UInt8], kind: SubscriptionKind, replaces: [UInt8]?, expiresAt: Int64?
    ) throws -> (Subscription, created: Bool, channel: Channel) {
        let nowMs = clock.nowMillis()
        let exp = Self.expiry(kind, requested: expiresAt, now: nowMs / 1000)
        return try write { c in
            let ch = try Self.openChannel(c, channelID)
            if let old = replaces, old != token {
                try Self.delete(c, channelNum: ch.num, token: old)
            }
            let r = try c.queryOne(
                """
                INSERT INTO subscriptions (channel, shard, kind, token, registered_at_ms, expires_at)
                VALUES ($1, $2, $3, $4, $5, $6)
                ON CONFLICT (channel, kind, shard, token) DO UPDATE
                SET registered_at_ms = EXCLUDED.registered_at_ms, expires_at = EXCLUDED.expires_at
                RETURNING (xmax = 0) AS created
                """,
                [.int8(ch.num), .int(Shards.shard(of: token)), .int8(kind.storedCode), .bytea(token), .int8(nowMs), exp.parameter])
            let created = try r?.bool("created") ?? false
            return (
                Subscription.stored(channelID: channelID, token: token, kind: kind, registeredAtMillis: nowMs, expiresAt: exp),
                created, ch
            )
        }
    }

    /// Removes `token` (any kind) from a channel. Throws `subscriptionNotFound` when there
    /// was none, `channelNotFound` for an unknown channel.
    public func unregister(channelID: String, token: [UInt8]) throws {
        try write { c in
            guard let ch = try Self.loadChannel(c, id: channelID) else { throw StoreError.channelNotFound(channelID) }
            let n = try Self.delete(c, channelNum: ch.num, token: token)
            if n == 0 { throw StoreError.subscriptionNotFound }
        }
    }

    /// Rows per chunk of a batch (one transaction for the whole batch).
    static let batchChunk = 10_000

    /// Bulk registration in one transaction, in chunks (`ingest`: new tokens by binary
    /// COPY, registered ones by an upsert that refreshes their registration), then the
    /// removals; a batch that created `vacuumAfterCreated` rows or more then vacuums
    /// `subscriptions` (`vacuumSubscriptions()`) before it returns.
    public func batch(channelID: String, subscribe: [SubscriptionInput], unsubscribe: [[UInt8]]) throws -> BatchResult {
        let result = try writeBatch(channelID: channelID, subscribe: subscribe, unsubscribe: unsubscribe)
        if result.subscribed >= Self.vacuumAfterCreated { vacuumSubscriptions() }
        return result
    }

    private func writeBatch(channelID: String, subscribe: [SubscriptionInput], unsubscribe: [[UInt8]]) throws -> BatchResult {
        let nowMs = clock.nowMillis()
        let activityExp = nowMs / 1000 + Store.activityLifetime
        // One row per (kind, token), the last entry winning (as SQLite's stable sort makes
        // it): an upsert may not touch a row twice. Repeats count as updates there too.
        var last: [Key: Int] = [:]
        last.reserveCapacity(subscribe.count)
        for (i, s) in subscribe.enumerated() { last[Key(kind: s.kind.storedCode, token: s.token)] = i }
        let rows = last.values.sorted().map { subscribe[$0] }
        let repeats = subscribe.count - rows.count
        return try write { c in
            let ch = try Self.openChannel(c, channelID)
            var created = 0
            var joined: [[UInt8]] = []
            var start = 0
            var path = ingestPath
            while start < rows.count {
                let chunk = rows[start..<min(start + Self.batchChunk, rows.count)].map { s in
                    IngestRow(
                        shard: Int64(Shards.shard(of: s.token)), kind: s.kind.storedCode, token: s.token,
                        expiresAt: s.kind == .activity ? min(s.expiresAt ?? activityExp, activityExp) : s.expiresAt)
                }
                start += chunk.count
                let r = try Self.ingest(c, channel: ch.num, nowMs: nowMs, chunk, path: &path)
                created += r.created
                joined += r.joined
            }
            var unsubscribed = 0
            if !unsubscribe.isEmpty {
                let gone = try c.query(
                    """
                    DELETE FROM subscriptions s USING unnest($3::int8[], $4::bytea[]) AS u(shard, token)
                    WHERE s.channel = $1 AND s.kind = ANY($2::int8[]) AND s.shard = u.shard AND s.token = u.token
                    RETURNING s.token
                    """,
                    [
                        .int8(ch.num), Self.bothKinds, .array(unsubscribe.map { .int(Shards.shard(of: $0)) }),
                        .array(unsubscribe.map { .bytea($0) }),
                    ])
                unsubscribed = gone.count
                if !joined.isEmpty && unsubscribed > 0 {
                    let removed = Set(try gone.map { r throws(PostgresError) in try r.bytea("token") })
                    joined.removeAll { removed.contains($0) }
                }
            }
            // The VACUUM that follows marks a page all-visible only once the commit of its
            // rows is flushed (until then it cannot set their hint bits): this commit waits
            // for its flush even where synchronous_commit is off.
            if created >= Self.vacuumAfterCreated { try c.execute("SET LOCAL synchronous_commit = on") }
            joined.sort { $0.lexicographicallyPrecedes($1) }
            return BatchResult.stored(
                subscribed: created, updated: rows.count - created + repeats, unsubscribed: unsubscribed, joined: joined,
                channel: ch)
        }
    }

    struct Key: Hashable {
        var kind: Int64
        var token: [UInt8]
    }

    /// Removes tokens APNs reported dead, each unless it was registered at or after its
    /// `beforeMillis` (APNs' 410 timestamp: a re-registration after it wins). Returns how
    /// many were removed.
    public func prune(channelNum: Int64, _ items: [(kind: SubscriptionKind, token: [UInt8], beforeMillis: Int64)]) throws -> Int {
        guard !items.isEmpty else { return 0 }
        return try write { c in
            try c.run(
                """
                DELETE FROM subscriptions s USING unnest($2::int8[], $3::bytea[], $4::int8[], $5::int8[]) AS u(kind, token, before_ms, shard)
                WHERE s.channel = $1 AND s.kind = u.kind AND s.shard = u.shard AND s.token = u.token AND s.registered_at_ms < u.before_ms
                """, Self.pruneArguments(channelNum, items))
        }
    }

    /// Deletes expired subscriptions, at most `limit` per call. Returns how many.
    public func sweepExpiredSubscriptions(limit: Int = 10_000) throws -> Int {
        let now = clock.nowSeconds()
        return try write { c in
            try c.run(
                """
                DELETE FROM subscriptions WHERE ctid = ANY(ARRAY(
                    SELECT ctid FROM subscriptions WHERE expires_at IS NOT NULL AND expires_at <= $1 LIMIT $2))
                """, [.int8(now), .int(limit)])
        }
    }

    /// Subscriptions of every channel by kind (expired ones included until swept).
    public func subscriptionTotals() throws -> (activity: Int64, pushToStart: Int64) {
        try read { c in
            var a: Int64 = 0
            var p: Int64 = 0
            for r in try c.query("SELECT kind, count(*) AS n FROM subscriptions GROUP BY kind") {
                if try r.int64("kind") == SubscriptionKind.activity.storedCode { a = try r.int64("n") } else { p = try r.int64("n") }
            }
            return (a, p)
        }
    }

    /// Live subscriptions of `kind` on a channel.
    public func countSubscriptions(channelNum: Int64, kind: SubscriptionKind) throws -> Int64 {
        let now = clock.nowSeconds()
        return try read { c in
            try Self.countLive(c, channelNum: channelNum, kind: kind, now: now)
        }
    }

    static func countLive(_ c: PostgresConnection, channelNum: Int64, kind: SubscriptionKind, now: Int64) throws(PostgresError) -> Int64 {
        try c.queryValue(
            "SELECT count(*) FROM subscriptions WHERE channel = $1 AND kind = $2 AND (expires_at IS NULL OR expires_at > $3)",
            [.int8(channelNum), .int8(kind.storedCode), .int8(now)])?.int64Value ?? 0
    }

    /// A reader of subscriptions on its own connection (the fan-out's executor thread).
    public func makeScanner() throws -> SubscriptionScan {
        try Self.translating { PostgresScanner(connection: try PostgresScanner.open(pool), pool: pool) }
    }
}
