import HeraldStore

/// The rows a scanner read past what one call asked for, kept per pass (channel, kind,
/// shards, upper bound) and handed to the next call that continues where the last one
/// stopped. A pure value (tested without a database): `PostgresScanner` fills it.
///
/// Why: the fan-out reads a pass 500 tokens at a time on its engine thread, and on
/// PostgreSQL every read is a round trip that the thread waits for (3-7 ms measured at
/// load average 6-10, the engine thread blocked 37-55% of its time; docs/performance.md §8).
/// Reading several batches per statement pays that once per `batches`.
///
/// Rows are kept at most `maxAge` seconds after they were read, and a pass is forgotten once
/// its range is exhausted and served: a later pass (the next event) reads the database again.
struct ScanReadAhead {
    struct Key: Hashable {
        var channelNum: Int64
        var kind: SubscriptionKind
        var shards: ShardSet
        var before: [UInt8]?
    }

    struct Row: Equatable {
        var token: [UInt8]
        var registeredAtMillis: Int64
        var expiresAt: Int64?
    }

    /// One pass's rows read and not yet handed out.
    struct Pass {
        /// The last token handed out: a call continues the pass when it asks for what follows.
        var served: [UInt8]
        var rows: [Row] = []
        var next = 0
        /// The last token read (the next read starts after it).
        var read: [UInt8]
        /// The last read returned fewer rows than asked for: the range ends with `rows`.
        var exhausted = false
        var used: Int
        /// When the rows were read (`at` of `filled`).
        var readAt: Double
    }

    /// Passes kept at most (several channels fan out at once, round robin): the least
    /// recently used goes first.
    let capacity: Int
    /// Seconds rows read ahead are served for.
    let maxAge: Double
    private(set) var passes: [Key: Pass] = [:]
    private var clock = 0

    init(capacity: Int = 16, maxAge: Double = 1) {
        self.capacity = max(1, capacity)
        self.maxAge = maxAge
    }

    /// Up to `limit` rows live at `now` (seconds) of `key` after `after`, from what was
    /// read before (at most `maxAge` before `at`, a monotonic clock's seconds), and whether
    /// the database must be read for more (`readAfter`: after which token; nil: the range
    /// is exhausted or `limit` is met).
    mutating func take(_ key: Key, after: [UInt8], now: Int64, at: Double, limit: Int) -> (rows: [Row], readAfter: [UInt8]?) {
        clock += 1
        var pass: Pass
        if let p = passes[key], p.served == after, at - p.readAt <= maxAge {
            pass = p
        } else {
            pass = Pass(served: after, read: after, used: clock, readAt: at)
        }
        pass.used = clock
        var out: [Row] = []
        while out.count < limit && pass.next < pass.rows.count {
            let r = pass.rows[pass.next]
            pass.next += 1
            if let e = r.expiresAt, e <= now { continue }
            out.append(r)
        }
        if pass.next == pass.rows.count {
            pass.rows.removeAll(keepingCapacity: true)
            pass.next = 0
        }
        if let last = out.last { pass.served = last.token }
        if pass.exhausted && pass.rows.isEmpty {
            // The range ends here: the next pass starts afresh.
            passes[key] = nil
            return (out, nil)
        }
        store(key, pass)
        let more = out.count < limit && pass.rows.isEmpty
        return (out, more ? pass.read : nil)
    }

    /// Rows read at `at` from the database after the pass's last read row, asked for `asked`.
    /// Rows still unserved keep the pass's time of reading (the older: every row is served
    /// at most `maxAge` after it was read).
    mutating func filled(_ key: Key, _ rows: [Row], asked: Int, at: Double) {
        guard var pass = passes[key] else { return }
        if pass.rows.isEmpty { pass.readAt = at }
        pass.rows += rows
        if let last = rows.last { pass.read = last.token }
        pass.exhausted = rows.count < asked
        store(key, pass)
    }

    /// Where the next read of `key`'s pass starts (its last read row), nil when there is no
    /// such pass or its range is read to the end: what a read sent ahead of time asks for.
    func nextRead(_ key: Key) -> [UInt8]? {
        guard let pass = passes[key], !pass.exhausted else { return nil }
        return pass.read
    }

    /// Whether rows of `key` read after `after` at `readAt` continue its pass at `at`: the
    /// pass's last read row is still `after`, its range not read to the end, and the rows
    /// at most `maxAge` old. (A read sent ahead of time is used only then.)
    func continues(_ key: Key, after: [UInt8], readAt: Double, at: Double) -> Bool {
        nextRead(key) == after && at - readAt <= maxAge
    }

    /// Forgets every pass (the connection was lost: rows may be stale by then).
    mutating func reset() { passes.removeAll() }

    private mutating func store(_ key: Key, _ pass: Pass) {
        passes[key] = pass
        if passes.count > capacity, let oldest = passes.min(by: { $0.value.used < $1.value.used })?.key {
            passes[oldest] = nil
        }
    }
}
