import Dispatch

// The ways into the writer thread. Every batched job runs inside the batch's transaction,
// in its own savepoint: it must not BEGIN, COMMIT or ROLLBACK itself (use
// `SQLiteConnection.transaction` or `savepoint`, which nest).
extension Database {
    /// Runs `body` on the writer thread and returns once its batch is committed: on
    /// return the changes are durable (with `synchronous = .full`) and visible to readers.
    ///
    /// If `body` throws, only its own changes are undone and its error is rethrown; the
    /// other jobs of the batch proceed. If the batch cannot commit (disk full, I/O error),
    /// every job in it gets that error and none of its changes remain.
    /// - Throws: `DatabaseError.overloaded` when the queue stays full for
    ///   `options.enqueueTimeout`; `DatabaseError.closed`; `DatabaseError.writeFromWriterThread`
    ///   when called from inside a job; `SQLiteError`; or what `body` throws.
    /// - Thread: any thread but the writer's and the cooperative pool (it blocks).
    @discardableResult
    public func write<T: Sendable>(_ body: @escaping @Sendable (SQLiteConnection) throws -> T) throws -> T {
        try waitFor(.batched, body)
    }

    /// Queues `body` and returns at once; `completion` gets its outcome after the batch
    /// committed (or failed), on the writer thread — keep it short, it delays the next batch.
    /// - Throws: `DatabaseError.overloaded` at once when the queue is full (it never
    ///   waits), `DatabaseError.closed`; then `completion` is not called.
    /// - Thread: any, the writer thread included.
    public func write<T: Sendable>(
        _ body: @escaping @Sendable (SQLiteConnection) throws -> T,
        completion: @escaping @Sendable (Result<T, any Error>) -> Void
    ) throws {
        try submit(.batched, body, timeout: nil, blocking: false, completion: completion)
    }

    /// Runs `body` on the writer thread without blocking a thread while it waits: for
    /// async callers on the cooperative pool. Semantics as the blocking `write`.
    /// - Throws: `DatabaseError.overloaded` at once when the queue is full, and as `write`.
    @discardableResult
    public func write<T: Sendable>(_ body: @escaping @Sendable (SQLiteConnection) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            do {
                try submit(.batched, body, timeout: nil, blocking: false) { continuation.resume(with: $0) }
            } catch {
                continuation.resume(throwing: error)
            }
        }
    }

    /// Runs `body` alone on the writer connection with no transaction around it: for work
    /// that cannot run in a transaction or must control its own (migrations, VACUUM,
    /// `PRAGMA wal_checkpoint`). A transaction left open is rolled back and reported.
    /// - Throws: as `write`, plus `DatabaseError.transactionLeftOpen`.
    /// - Thread: as `write`.
    @discardableResult
    public func writeUnbatched<T: Sendable>(_ body: @escaping @Sendable (SQLiteConnection) throws -> T) throws -> T {
        try waitFor(.unbatched, body)
    }

    /// Tests: waits until `n` jobs are queued behind the running one.
    func waitForWriteQueueDepth(atLeast n: Int, timeout: Duration = .seconds(30)) -> Bool {
        writer.waitForDepth(atLeast: n, timeout: timeout)
    }

    private func waitFor<T: Sendable>(
        _ kind: WriteJob.Kind, _ body: @escaping @Sendable (SQLiteConnection) throws -> T
    ) throws -> T {
        let done = DispatchSemaphore(value: 0)
        let outcome = HandOff<Result<T, any Error>>()
        try submit(kind, body, timeout: options.enqueueTimeout, blocking: true) { result in
            outcome.value = result
            done.signal()
        }
        done.wait()
        return try outcome.value!.get()
    }

    private func submit<T: Sendable>(
        _ kind: WriteJob.Kind, _ body: @escaping @Sendable (SQLiteConnection) throws -> T, timeout: Duration?,
        blocking: Bool, completion: @escaping @Sendable (Result<T, any Error>) -> Void
    ) throws(DatabaseError) {
        let value = HandOff<T>()
        let job = WriteJob(
            kind: kind,
            run: { connection in value.value = try body(connection) },
            finish: { error in
                // `run` stored a value whenever it returned, and finish(nil) comes only then.
                completion(error.map { .failure($0) } ?? .success(value.value!))
            })
        try writer.enqueue(job, timeout: timeout, blocking: blocking)
    }
}
