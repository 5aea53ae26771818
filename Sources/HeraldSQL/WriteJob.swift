/// One unit of work for the writer thread, with the callback that reports its outcome.
final class WriteJob: Sendable {
    enum Kind: Sendable {
        /// Runs inside the batch's transaction, in its own savepoint.
        case batched
        /// Runs alone, with no transaction around it (migrations, VACUUM, checkpoints).
        case unbatched
    }

    let kind: Kind
    /// The work; on the writer thread.
    let run: @Sendable (SQLiteConnection) throws -> Void
    /// Called once, on the writer thread, after the batch committed (nil) or failed.
    let finish: @Sendable ((any Error)?) -> Void

    init(
        kind: Kind, run: @escaping @Sendable (SQLiteConnection) throws -> Void,
        finish: @escaping @Sendable ((any Error)?) -> Void
    ) {
        self.kind = kind
        self.run = run
        self.finish = finish
    }
}

/// A value handed from one closure to another across a thread hand-off.
final class HandOff<Value>: @unchecked Sendable {
    // Written by one thread and read by another only after a synchronizing hand-off (the
    // writer runs `run` then `finish` on its own thread; a semaphore orders the waiter's
    // read after the writer's write), so no lock is needed.
    var value: Value?
}
