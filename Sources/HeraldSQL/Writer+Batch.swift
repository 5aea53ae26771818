import CSQLite

// Group commit: a batch of jobs runs in one BEGIN IMMEDIATE … COMMIT, each job in its own
// savepoint, and one fsync makes them all durable. Callers learn their outcome only after
// the COMMIT, so a success is always a durable success.
extension Writer {
    func runBatch(_ batch: [WriteJob]) {
        var next = 0
        while next < batch.count { next = runTransaction(batch, from: next) }
    }

    /// Runs jobs from `start` in one transaction, commits, reports. Stops early when SQLite
    /// rolled the transaction back under a job (disk full, I/O error); returns the index of
    /// the first job not yet run, so the rest go in a fresh transaction.
    private func runTransaction(_ batch: [WriteJob], from start: Int) -> Int {
        do {
            try connection.cached("BEGIN IMMEDIATE").run()
        } catch {
            failedCommits.add(1, ordering: .relaxed)
            for job in batch[start...] { report(job, error) }
            return batch.count
        }

        var outcomes: [(job: WriteJob, error: (any Error)?)] = []
        outcomes.reserveCapacity(batch.count - start)
        var next = start
        while next < batch.count {
            let job = batch[next]
            next += 1
            let error = runInSavepoint(job)
            outcomes.append((job, error))
            if !connection.isInTransaction {
                // The transaction is gone, and with it the work of the jobs before: they
                // must not hear "done".
                let cause = Self.transactionLost(by: error)
                failedCommits.add(1, ordering: .relaxed)
                for o in outcomes { report(o.job, o.error ?? cause) }
                return next
            }
        }

        if outcomes.allSatisfy({ $0.error != nil }) {
            connection.rollbackIfNeeded()  // nothing to keep: skip the fsync
            for o in outcomes { report(o.job, o.error) }
            return next
        }
        connection.resetBusyStatements()  // a statement left mid-step would block COMMIT
        do {
            try connection.cached("COMMIT").run()
            commits.add(1, ordering: .relaxed)
            for o in outcomes { report(o.job, o.error) }
        } catch {
            connection.rollbackIfNeeded()
            failedCommits.add(1, ordering: .relaxed)
            for o in outcomes { report(o.job, o.error ?? error) }
        }
        return next
    }

    /// Runs one job in its own savepoint; a throwing job undoes only its own changes.
    private func runInSavepoint(_ job: WriteJob) -> (any Error)? {
        do {
            try connection.savepoint("herald_job") { try job.run(connection) }
            return nil
        } catch {
            return error
        }
    }

    /// The error for jobs whose transaction SQLite rolled back under them.
    private static func transactionLost(by error: (any Error)?) -> any Error {
        switch error {
        case let e as SQLiteError: e
        case nil: DatabaseError.jobEndedTransaction
        default:
            SQLiteError(
                extendedCode: ExtendedCode.abortRollback,
                message: "the batch transaction was rolled back after an error in one of its jobs")
        }
    }

    /// Runs a job alone with no transaction around it; a transaction it leaves open is
    /// rolled back (and reported).
    func runUnbatched(_ job: WriteJob) {
        var failure: (any Error)?
        do {
            try job.run(connection)
        } catch {
            failure = error
        }
        if connection.isInTransaction {
            connection.resetBusyStatements()
            connection.rollbackIfNeeded()
            failure = failure ?? DatabaseError.transactionLeftOpen
        }
        report(job, failure)
    }

    private func report(_ job: WriteJob, _ error: (any Error)?) {
        jobs.add(1, ordering: .relaxed)
        if error != nil { failedJobs.add(1, ordering: .relaxed) }
        job.finish(error)
    }
}
