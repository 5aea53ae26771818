import HeraldCore
import HeraldSQL

#if canImport(Glibc)
import Glibc
#endif

/// A subscription as the API shows it.
public struct Subscription: Sendable, Equatable {
    public var channelID: String
    public var token: [UInt8]
    public var kind: SubscriptionKind
    public var registeredAtMillis: Int64
    public var expiresAt: Int64?
}

/// One entry of a bulk registration.
public struct SubscriptionInput: Sendable {
    public var token: [UInt8]
    public var kind: SubscriptionKind
    public var expiresAt: Int64?

    public init(token: [UInt8], kind: SubscriptionKind = .activity, expiresAt: Int64? = nil) {
        self.token = token
        self.kind = kind
        self.expiresAt = expiresAt
    }
}

/// Counts of a bulk registration.
public struct BatchResult: Sendable, Equatable {
    public var subscribed = 0
    public var updated = 0
    public var unsubscribed = 0
    /// The `activity` tokens this batch registered for the first time (in token order):
    /// the late joiners a current state is owed to (design delivery 9). A token that was
    /// already there, or is removed again by the same batch, is not among them.
    public var joined: [[UInt8]] = []
    /// The channel as the batch's transaction saw it (its catch-up setting and current
    /// event decide whether `joined` is owed anything).
    public var channel: Channel?
}

extension Store {
    /// A Live Activity lives at most 12 h (reference §7.4): activity subscriptions expire
    /// then at the latest.
    public static let activityLifetime: Int64 = 12 * 3600

    func expiry(_ kind: SubscriptionKind, requested: Int64?, now: Int64) -> Int64? {
        switch kind {
        case .activity: return min(requested ?? Int64.max, now + Self.activityLifetime)
        case .pushToStart: return requested
        }
    }

    static func openChannel(_ c: SQLiteConnection, _ id: String) throws -> Channel {
        guard let ch = try loadChannel(c, id: id) else { throw StoreError.channelNotFound(id) }
        guard ch.isOpen else { throw StoreError.channelClosed(id) }
        return ch
    }

    /// Registers `token` (idempotent: a repeat refreshes its registration time, which is what
    /// protects it from a 410 APNs stamped earlier). With `replaces`, the old token is
    /// removed in the same transaction (token rotation, reference §7.5). Returns the
    /// subscription, whether it is new, and the channel.
    public func register(
        channelID: String, token: [UInt8], kind: SubscriptionKind, replaces: [UInt8]?, expiresAt: Int64?
    ) throws -> (Subscription, created: Bool, channel: Channel) {
        let nowMs = clock.nowMillis()
        let exp = expiry(kind, requested: expiresAt, now: nowMs / 1000)
        return try write { c in
            let ch = try Self.openChannel(c, channelID)
            if let old = replaces, old != token {
                let d = try c.cached("DELETE FROM subscriptions WHERE channel = ? AND token = ?")
                try d.bind(1, int64: ch.num)
                try d.bind(2, blob: old)
                _ = try d.run()
            }
            let ins = try c.cached(
                "INSERT OR IGNORE INTO subscriptions (channel, kind, token, registered_at_ms, expires_at) VALUES (?, ?, ?, ?, ?)")
            try ins.bind([.integer(ch.num), .integer(kind.code), .blob(token), .integer(nowMs), exp.map { .integer($0) } ?? .null])
            let created = try ins.run() == 1
            if !created {
                let upd = try c.cached(
                    "UPDATE subscriptions SET registered_at_ms = ?, expires_at = ? WHERE channel = ? AND kind = ? AND token = ?")
                try upd.bind([.integer(nowMs), exp.map { .integer($0) } ?? .null, .integer(ch.num), .integer(kind.code), .blob(token)])
                _ = try upd.run()
            }
            return (Subscription(channelID: channelID, token: token, kind: kind, registeredAtMillis: nowMs, expiresAt: exp), created, ch)
        }
    }

    /// Removes `token` (any kind) from a channel. Throws `subscriptionNotFound` when there
    /// was none, `channelNotFound` for an unknown channel.
    public func unregister(channelID: String, token: [UInt8]) throws {
        try write { c in
            guard let ch = try Self.loadChannel(c, id: channelID) else { throw StoreError.channelNotFound(channelID) }
            let d = try c.cached("DELETE FROM subscriptions WHERE channel = ? AND token = ?")
            try d.bind(1, int64: ch.num)
            try d.bind(2, blob: token)
            if try d.run() == 0 { throw StoreError.subscriptionNotFound }
        }
    }

    /// Bulk registration in one transaction: a million tokens is a few seconds.
    public func batch(channelID: String, subscribe: [SubscriptionInput], unsubscribe: [[UInt8]]) throws -> BatchResult {
        let nowMs = clock.nowMillis()
        let now = nowMs / 1000
        let activityExp = now + Self.activityLifetime
        // In key order: consecutive inserts land on the same or the next B-tree page, which
        // the page cache still holds (random tokens in arrival order cost ~30% more at 1M).
        // Stable, so a token listed twice in one batch still ends as its last entry says.
        // Sorted here, on the caller's thread: the writer thread is the bottleneck of ingest.
        let sorted = subscribe.indices.sorted { a, b in
            let x = subscribe[a]
            let y = subscribe[b]
            if x.kind.code != y.kind.code { return x.kind.code < y.kind.code }
            let c = Self.compareBytes(x.token, y.token)
            return c != 0 ? c < 0 : a < b
        }.map { subscribe[$0] }
        return try write { c in
            let ch = try Self.openChannel(c, channelID)
            var r = BatchResult()
            let ins = try c.prepare(
                "INSERT OR IGNORE INTO subscriptions (channel, kind, token, registered_at_ms, expires_at) VALUES (?1, ?2, ?3, ?4, ?5)")
            let upd = try c.prepare(
                "UPDATE subscriptions SET registered_at_ms = ?4, expires_at = ?5 WHERE channel = ?1 AND kind = ?2 AND token = ?3")
            for s in sorted {
                let exp: Int64? = s.kind == .activity ? min(s.expiresAt ?? activityExp, activityExp) : s.expiresAt
                func bind(_ st: Statement) throws {
                    st.reset()
                    try st.bind(1, int64: ch.num)
                    try st.bind(2, int64: s.kind.code)
                    try st.bind(3, blob: s.token)
                    try st.bind(4, int64: nowMs)
                    if let exp { try st.bind(5, int64: exp) } else { try st.bindNull(5) }
                }
                try bind(ins)
                if try ins.run() == 1 {
                    r.subscribed += 1
                    if s.kind == .activity { r.joined.append(s.token) }
                } else {
                    try bind(upd)
                    _ = try upd.run()
                    r.updated += 1
                }
            }
            let del = try c.prepare("DELETE FROM subscriptions WHERE channel = ? AND token = ?")
            for t in unsubscribe {
                del.reset()
                try del.bind(1, int64: ch.num)
                try del.bind(2, blob: t)
                r.unsubscribed += try del.run()
            }
            if !unsubscribe.isEmpty && !r.joined.isEmpty {
                let removed = Set(unsubscribe)
                r.joined.removeAll { removed.contains($0) }
            }
            r.channel = ch
            return r
        }
    }

    /// memcmp order, shorter first on a tie (SQLite's BLOB order). Not `lexicographicallyPrecedes`:
    /// a 200k-token batch is sorted in ~0.1 s this way.
    static func compareBytes(_ a: [UInt8], _ b: [UInt8]) -> Int32 {
        let c = a.withUnsafeBufferPointer { pa in
            b.withUnsafeBufferPointer { pb in memcmp(pa.baseAddress!, pb.baseAddress!, min(pa.count, pb.count)) }
        }
        return c != 0 ? c : Int32(a.count) - Int32(b.count)
    }

    /// Removes a token APNs reported dead, unless it was registered at or after `beforeMillis`
    /// (APNs' 410 timestamp: a re-registration after it wins, reference §8.10). Called with
    /// many at once. Returns how many were removed.
    public func prune(channelNum: Int64, _ items: [(kind: SubscriptionKind, token: [UInt8], beforeMillis: Int64)]) throws -> Int {
        guard !items.isEmpty else { return 0 }
        return try write { c in
            let d = try c.cached("DELETE FROM subscriptions WHERE channel = ? AND kind = ? AND token = ? AND registered_at_ms < ?")
            var n = 0
            for i in items {
                d.reset()
                try d.bind(1, int64: channelNum)
                try d.bind(2, int64: i.kind.code)
                try d.bind(3, blob: i.token)
                try d.bind(4, int64: i.beforeMillis)
                n += try d.run()
            }
            return n
        }
    }

    /// Deletes expired subscriptions, at most `limit` per call. Returns how many.
    public func sweepExpiredSubscriptions(limit: Int = 10_000) throws -> Int {
        let now = clock.nowSeconds()
        return try write { c in
            try c.run(
                """
                DELETE FROM subscriptions WHERE (channel, kind, token) IN
                    (SELECT channel, kind, token FROM subscriptions WHERE expires_at IS NOT NULL AND expires_at <= ? LIMIT ?)
                """, [.integer(now), .integer(Int64(limit))])
        }
    }

    /// Subscriptions of every channel by kind (expired ones included until swept). One pass
    /// that sums the kinds (0 or 1: the push-to-start ones): `GROUP BY kind` sorted every row
    /// into a temporary b-tree, the key not starting with it (~2,000 instructions a row
    /// against ~475; the sweep counts the whole registry every minute).
    public func subscriptionTotals() throws -> (activity: Int64, pushToStart: Int64) {
        try read { c in
            var total: Int64 = 0
            var p: Int64 = 0
            try c.forEachRow("SELECT COUNT(*), SUM(kind) FROM subscriptions") { s in
                total = s.int64(0)
                p = s.int64(1)  // NULL (no rows) reads as 0
                return false
            }
            return (total - p, p)
        }
    }

    /// Live subscriptions of `kind` on a channel.
    public func countSubscriptions(channelNum: Int64, kind: SubscriptionKind) throws -> Int64 {
        let now = clock.nowSeconds()
        return try read { c in
            try c.queryValue(
                "SELECT COUNT(*) FROM subscriptions WHERE channel = ? AND kind = ? AND (expires_at IS NULL OR expires_at > ?)",
                [.integer(channelNum), .integer(kind.code), .integer(now)])?.int64Value ?? 0
        }
    }

    /// The subscription of `token` on a channel, if any.
    public func subscription(channelNum: Int64, token: [UInt8]) throws -> (
        kind: SubscriptionKind, registeredAtMillis: Int64, expiresAt: Int64?
    )? {
        try read { c in
            guard
                let r = try c.queryOne(
                    "SELECT kind, registered_at_ms, expires_at FROM subscriptions WHERE channel = ? AND token = ? ORDER BY kind LIMIT 1",
                    [.integer(channelNum), .blob(token)])
            else { return nil }
            return (SubscriptionKind(code: r[0].int64Value ?? 0) ?? .activity, r[1].int64Value ?? 0, r[2].int64Value)
        }
    }
}

/// Streams a channel's subscriptions in token order, in batches, on its own read-only
/// connection: memory does not grow with the number of subscribers (issue #3). Each batch
/// is one short read transaction, so a long fan-out never holds the WAL back.
/// Not thread-safe: one scanner per thread.
public final class SubscriptionScanner {
    let connection: SQLiteConnection
    private let open: Statement
    private let bounded: Statement

    public init(store: Store) throws {
        connection = try store.db.openReader()
        open = try connection.prepare(
            """
            SELECT token FROM subscriptions
            WHERE channel = ?1 AND kind = ?2 AND token > ?3 AND (expires_at IS NULL OR expires_at > ?4)
            ORDER BY token LIMIT ?5
            """)
        bounded = try connection.prepare(
            """
            SELECT token FROM subscriptions
            WHERE channel = ?1 AND kind = ?2 AND token > ?3 AND token <= ?6 AND (expires_at IS NULL OR expires_at > ?4)
            ORDER BY token LIMIT ?5
            """)
    }

    deinit { connection.close() }

    /// Up to `limit` live tokens of `kind` after `after` (exclusive; empty = from the start)
    /// and, when given, up to `before` (inclusive).
    public func next(
        channelNum: Int64, kind: SubscriptionKind, after: [UInt8], before: [UInt8]?, now: Int64, limit: Int
    ) throws -> TokenRows {
        let s = before == nil ? open : bounded
        s.reset()
        try s.bind(1, int64: channelNum)
        try s.bind(2, int64: kind.code)
        try s.bind(3, blob: after)
        try s.bind(4, int64: now)
        try s.bind(5, int64: Int64(limit))
        if let before { try s.bind(6, blob: before) }
        var out = TokenRows(capacity: limit)
        while try s.step() {
            s.withBlob(0) { out.append($0) }
        }
        s.reset()
        return out
    }
}
