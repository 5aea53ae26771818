/// How a `Database` opens and runs its file. Every field has a documented default.
public struct DatabaseOptions: Sendable {
    /// When a commit reaches the disk.
    public enum Synchronous: Sendable {
        /// Every commit is fsynced before `write` returns: an acknowledged write survives
        /// power loss. Group commit pays one fsync per batch, not per job. (Default.)
        case full
        /// fsync only at checkpoints: much faster, never corrupt, but a power loss (not a
        /// process crash) can lose the last commits.
        case normal

        var pragmaValue: String {
            switch self {
            case .full: "FULL"
            case .normal: "NORMAL"
            }
        }
    }

    /// Durability of commits. Default `.full`.
    public var synchronous: Synchronous
    /// How long a connection waits for another's lock (another process, a checkpoint)
    /// before failing with `isBusy`. Default 5 s.
    public var busyTimeout: Duration
    /// Most write jobs waiting for the writer thread. Default 10 000.
    public var writeQueueCapacity: Int
    /// How long a blocking `write` waits for room in a full queue before throwing
    /// `DatabaseError.overloaded`. Default 1 s.
    public var enqueueTimeout: Duration
    /// Most jobs committed together in one transaction. Default 1 000.
    public var maxJobsPerCommit: Int
    /// Read-only connections kept open for `read`; more are opened (and closed after use)
    /// when more threads read at once. Default 4.
    public var readerCount: Int
    /// The writer's page cache, in KiB (an upper bound, filled as pages are touched).
    /// Default 32 768 (32 MiB): bulk registration rewrites index pages all over the file.
    public var cacheSizeKiB: Int
    /// Each reader's page cache, in KiB. Default 8 192 (8 MiB): readers mostly stream a
    /// channel's subscriptions once per fan-out, and a page missed here is a `pread` from the
    /// kernel's page cache (a 1M-subscriber scan is ~15 000 pages, a few ms of syscalls).
    public var readerCacheSizeKiB: Int
    /// Bytes of the file read through mmap. Default 0 (off): mapped pages count in the
    /// process's resident memory, which then grows with the database (with 256 MiB and
    /// 32 MiB reader caches, a 1M-subscriber fan-out peaked at 241 MiB RSS; without, at
    /// 132-145 MiB), and the fan-out rate was the same (Benchmarks/fanout.sh).
    public var mmapSize: Int
    /// WAL pages after which a commit checkpoints into the main file. Default 8 000 (32 MiB
    /// at 4 KiB pages): bulk registration of random tokens dirties most index pages per
    /// batch, and a page rewritten by several commits between two checkpoints is copied
    /// into the main file once (1 000 cost 1M-token ingest ~25%).
    public var walAutocheckpointPages: Int
    /// Bytes the WAL is truncated to after a checkpoint. Default 64 MiB.
    public var journalSizeLimit: Int
    /// Prepared statements each connection keeps for `cached(_:)`. Default 64.
    public var statementCacheCapacity: Int

    public init(
        synchronous: Synchronous = .full,
        busyTimeout: Duration = .seconds(5),
        writeQueueCapacity: Int = 10_000,
        enqueueTimeout: Duration = .seconds(1),
        maxJobsPerCommit: Int = 1_000,
        readerCount: Int = 4,
        cacheSizeKiB: Int = 32_768,
        readerCacheSizeKiB: Int = 8_192,
        mmapSize: Int = 0,
        walAutocheckpointPages: Int = 8_000,
        journalSizeLimit: Int = 64 << 20,
        statementCacheCapacity: Int = 64
    ) {
        self.synchronous = synchronous
        self.busyTimeout = busyTimeout
        self.writeQueueCapacity = max(writeQueueCapacity, 1)
        self.enqueueTimeout = enqueueTimeout
        self.maxJobsPerCommit = max(maxJobsPerCommit, 1)
        self.readerCount = max(readerCount, 0)
        self.cacheSizeKiB = cacheSizeKiB
        self.readerCacheSizeKiB = readerCacheSizeKiB
        self.mmapSize = mmapSize
        self.walAutocheckpointPages = walAutocheckpointPages
        self.journalSizeLimit = journalSizeLimit
        self.statementCacheCapacity = statementCacheCapacity
    }
}
