/// Read-only connections for `Database.read`, reused across threads.
///
/// Locking: `idle` and `closed` are guarded by `lock`. A connection is used only by the
/// thread that checked it out; the lock orders one thread's use before the next's.
final class ReaderPool: @unchecked Sendable {
    private let lock = ConditionLock()
    private var idle: [SQLiteConnection] = []
    private var closed = false
    private let keep: Int
    private let open: @Sendable () throws -> SQLiteConnection

    /// Keeps up to `keep` idle connections; `open` makes a configured read-only one.
    init(keep: Int, open: @escaping @Sendable () throws -> SQLiteConnection) {
        self.keep = keep
        self.open = open
    }

    /// Opens the connections it keeps, so their descriptors and memory are taken at start
    /// rather than by whichever reads first come at once. Best effort: one that cannot be
    /// opened now is opened on demand later.
    func prewarm() {
        var opened: [SQLiteConnection] = []
        for _ in 0..<keep {
            guard let c = try? open() else { break }
            opened.append(c)
        }
        for c in opened { checkin(c) }
    }

    /// A fresh connection the caller owns (not pooled).
    /// - Throws: `DatabaseError.closed`, or `SQLiteError` when opening fails.
    func makeConnection() throws -> SQLiteConnection {
        try lock.withLock { () throws(DatabaseError) in if closed { throw .closed } }
        return try open()
    }

    /// An idle connection, or a new one when all are busy (readers never wait for each
    /// other in WAL mode, so neither do they here).
    /// - Throws: `DatabaseError.closed`, or `SQLiteError` when opening fails.
    func checkout() throws -> SQLiteConnection {
        let reused: SQLiteConnection? = try lock.withLock { () throws(DatabaseError) in
            if closed { throw .closed }
            return idle.popLast()
        }
        return try reused ?? open()
    }

    /// Returns a connection: cleaned (no statement mid-step, no open transaction), then
    /// kept, or closed when enough are idle or the pool is closed.
    func checkin(_ connection: SQLiteConnection) {
        connection.resetBusyStatements()
        connection.rollbackIfNeeded()
        let kept = lock.withLock {
            guard !closed, idle.count < keep else { return false }
            idle.append(connection)
            return true
        }
        if !kept { connection.close() }
    }

    /// Closes the idle connections; those checked out close when they come back.
    func close() {
        let toClose = lock.withLock {
            closed = true
            defer { idle.removeAll() }
            return idle
        }
        for connection in toClose { connection.close() }
    }
}
