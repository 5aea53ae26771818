import Foundation
import HeraldCore
import Synchronization

/// The one writer thread: a bounded queue of jobs, drained in batches, each batch one
/// transaction (group commit, see `Writer+Batch.swift`).
///
/// Locking: `queue`, `stopping`, `finished` and `threadID` are guarded by `lock`.
/// `connection` is used only by the writer thread once `start()` ran (the initializer's
/// thread configures it before, and the thread start orders that before its first use).
/// The counters are atomics, read by any thread.
final class Writer: @unchecked Sendable {
    private let lock = ConditionLock()
    /// Signalled when a job is queued or stopping begins (the writer and depth waiters).
    private let jobsAvailable: ConditionLock.Condition
    /// Signalled when jobs leave the queue or stopping begins (producers of a full queue).
    private let spaceAvailable: ConditionLock.Condition
    /// Signalled when the thread has closed its connection and exited its loop.
    private let exited: ConditionLock.Condition

    private var queue: [WriteJob] = []
    private var stopping = false
    private var finished = false
    private var threadID: pthread_t?

    let connection: SQLiteConnection
    let capacity: Int
    let maxJobsPerCommit: Int

    let commits = Atomic<UInt64>(0)
    let jobs = Atomic<UInt64>(0)
    let failedJobs = Atomic<UInt64>(0)
    let failedCommits = Atomic<UInt64>(0)

    init(connection: SQLiteConnection, capacity: Int, maxJobsPerCommit: Int) {
        self.connection = connection
        self.capacity = max(capacity, 1)
        self.maxJobsPerCommit = max(maxJobsPerCommit, 1)
        jobsAvailable = .init(lock)
        spaceAvailable = .init(lock)
        exited = .init(lock)
    }

    /// Starts the dedicated thread (not the Swift cooperative pool: jobs block on fsync).
    func start() {
        let thread = Thread { [self] in
            ThreadName.set("db-writer")
            self.main()
        }
        thread.name = "db-writer"
        thread.start()
    }

    /// Queues `job`. When the queue is full, waits up to `timeout` for room (nil: not at
    /// all). `blocking` callers are refused on the writer thread itself.
    func enqueue(_ job: WriteJob, timeout: Duration?, blocking: Bool) throws(DatabaseError) {
        lock.lock()
        defer { lock.unlock() }
        if stopping { throw .closed }
        if blocking, let id = threadID, pthread_equal(id, pthread_self()) != 0 { throw .writeFromWriterThread }
        if queue.count >= capacity {
            guard let timeout, timeout > .zero else { throw .overloaded(queueDepth: queue.count, capacity: capacity) }
            let (sum, overflow) = Monotonic.nanos().addingReportingOverflow(timeout.nanoseconds)
            let deadline = overflow ? UInt64.max : sum
            while queue.count >= capacity && !stopping {
                if !spaceAvailable.wait(untilNanos: deadline) && queue.count >= capacity {
                    throw .overloaded(queueDepth: queue.count, capacity: capacity)
                }
            }
            if stopping { throw .closed }
        }
        queue.append(job)
        jobsAvailable.broadcast()
    }

    /// Jobs waiting (not counting the batch being run).
    var depth: Int { lock.withLock { queue.count } }

    var stats: WriteStats {
        WriteStats(
            commits: commits.load(ordering: .relaxed), jobs: jobs.load(ordering: .relaxed),
            failedJobs: failedJobs.load(ordering: .relaxed), failedCommits: failedCommits.load(ordering: .relaxed))
    }

    /// Waits until at least `n` jobs are queued, or `timeout` passes (tests build batches
    /// deterministically with it). Returns whether the depth was reached.
    func waitForDepth(atLeast n: Int, timeout: Duration) -> Bool {
        let deadline = Monotonic.nanos() &+ timeout.nanoseconds
        lock.lock()
        defer { lock.unlock() }
        while queue.count < n {
            if !jobsAvailable.wait(untilNanos: deadline) { return queue.count >= n }
        }
        return true
    }

    /// Refuses new jobs, lets the thread run what is queued, then waits until it closed its
    /// connection. From the writer thread itself (a job closing the database) it returns
    /// at once and the thread stops after the current batch. Idempotent.
    func stop() {
        lock.lock()
        defer { lock.unlock() }
        stopping = true
        jobsAvailable.broadcast()
        spaceAvailable.broadcast()
        if let id = threadID, pthread_equal(id, pthread_self()) != 0 { return }
        while !finished { exited.wait() }
    }

    private func main() {
        lock.withLock { threadID = pthread_self() }
        while let batch = nextBatch() {
            if batch.count == 1, batch[0].kind == .unbatched {
                runUnbatched(batch[0])
            } else {
                runBatch(batch)
            }
        }
        connection.close()  // last, so SQLite checkpoints and removes the WAL
        lock.withLock {
            finished = true
            exited.broadcast()
        }
    }

    /// The next jobs to run: every batched job queued now (up to the cap) before the next
    /// unbatched one, or that unbatched job alone. Nil once stopping and drained.
    private func nextBatch() -> [WriteJob]? {
        lock.lock()
        defer { lock.unlock() }
        while queue.isEmpty && !stopping { jobsAvailable.wait() }
        if queue.isEmpty { return nil }
        var n = 1
        if queue[0].kind == .batched {
            let limit = min(queue.count, maxJobsPerCommit)
            while n < limit && queue[n].kind == .batched { n += 1 }
        }
        let batch = Array(queue[..<n])
        queue.removeFirst(n)
        spaceAvailable.broadcast()
        return batch
    }
}
