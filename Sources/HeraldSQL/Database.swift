/// The process's handle on one SQLite database file (WAL mode): one writer thread with
/// group commit, a pool of read-only connections, migrations, backup.
///
/// Sendable; call it from any thread. Its parts and their locks:
/// - writes: a bounded queue guarded by the writer's `ConditionLock`, drained by one
///   dedicated thread that owns the only read-write connection (`Writer.swift`);
/// - reads: idle read-only connections in a pool guarded by its own lock; a connection is
///   used by one thread at a time, outside the lock (`ReaderPool.swift`);
/// - counters: atomics.
/// Blocking calls (`write`, `read`, `migrate`, `backup`) must not run on the Swift
/// cooperative pool; use the `async` or completion forms of `write` there.
public final class Database: Sendable {
    /// The database file.
    public let path: String
    /// The options it was opened with.
    public let options: DatabaseOptions
    let writer: Writer
    let readers: ReaderPool

    /// Opens (creating with mode 0600 if missing) the database at `path`, switches it to
    /// WAL, applies `options`, and starts the writer thread.
    /// - Throws: `SQLiteError` when the file cannot be opened or is not a database,
    ///   `DatabaseError.walUnavailable` when WAL cannot be enabled.
    /// - Thread: any.
    public init(path: String, options: DatabaseOptions = DatabaseOptions()) throws {
        FileMode.createOwnerOnlyFileIfMissing(path)
        let connection = try SQLiteConnection(
            path: path, busyTimeout: options.busyTimeout, statementCacheCapacity: options.statementCacheCapacity)
        try Self.configureWriter(connection, options)
        self.path = path
        self.options = options
        writer = Writer(
            connection: connection, capacity: options.writeQueueCapacity, maxJobsPerCommit: options.maxJobsPerCommit)
        readers = ReaderPool(keep: options.readerCount) { try Database.openReader(path: path, options: options) }
        writer.start()
        readers.prewarm()
    }

    deinit { close() }

    /// Runs `body` on a pooled read-only connection inside one read transaction: every
    /// query in it sees the same committed snapshot, and the writer is never blocked.
    /// Does not see writes still in the writer's queue or uncommitted batch.
    /// - Throws: `DatabaseError.closed`, `SQLiteError`, or what `body` throws.
    /// - Thread: any thread but the cooperative pool; the connection must not escape `body`.
    public func read<T>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        let connection = try readers.checkout()
        defer { readers.checkin(connection) }
        return try connection.transaction(.deferred) { try body(connection) }
    }

    /// A new read-only connection owned by the caller, for long scans (a fan-out paging
    /// through millions of rows). Keep each read transaction short: an open one stops
    /// checkpoints from recycling the WAL, which then grows.
    /// - Throws: `DatabaseError.closed`, or `SQLiteError` when it cannot be opened.
    /// - Thread: any; the connection then belongs to one thread at a time.
    public func openReader() throws -> SQLiteConnection {
        try readers.makeConnection()
    }

    /// Jobs waiting for the writer thread (`herald_queue_depth{queue="db_write"}`).
    public var writeQueueDepth: Int { writer.depth }

    /// The writer's counters: commits, jobs, failures.
    public var writeStats: WriteStats { writer.stats }

    /// Stops accepting work, runs the writes already queued, stops the writer thread and
    /// closes the connections (the writer's last, so SQLite checkpoints and removes the
    /// WAL). Readers checked out at the time close when their `read` returns. Idempotent;
    /// `deinit` calls it.
    /// - Thread: any; from inside a write job it returns at once and the writer stops after
    ///   its current batch.
    public func close() {
        readers.close()
        writer.stop()
    }
}
