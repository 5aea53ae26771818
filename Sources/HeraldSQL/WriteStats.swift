/// Counters of the writer thread since the database opened (for metrics).
public struct WriteStats: Sendable, Equatable {
    /// Transactions committed (one per batch of jobs).
    public var commits: UInt64
    /// Jobs run, successful or not.
    public var jobs: UInt64
    /// Jobs that ended with an error (their own, or their batch's).
    public var failedJobs: UInt64
    /// Batches whose transaction did not commit (BEGIN or COMMIT failed, or SQLite rolled
    /// it back after an error).
    public var failedCommits: UInt64

    public init(commits: UInt64 = 0, jobs: UInt64 = 0, failedJobs: UInt64 = 0, failedCommits: UInt64 = 0) {
        self.commits = commits
        self.jobs = jobs
        self.failedJobs = failedJobs
        self.failedCommits = failedCommits
    }
}
