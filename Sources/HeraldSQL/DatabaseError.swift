/// Errors of `Database` itself (SQLite's own errors are `SQLiteError`).
public enum DatabaseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The write queue stayed full for `enqueueTimeout` (or was full for a caller that
    /// cannot wait): shed load, e.g. HTTP 503 with Retry-After.
    case overloaded(queueDepth: Int, capacity: Int)
    /// The database is closed or closing: no new work is accepted.
    case closed
    /// A blocking `write` was called from inside a write job; it would wait for itself.
    case writeFromWriterThread
    /// The file's schema is newer than this binary: it records `databaseVersion`, the
    /// newest migration this binary knows is `newestKnownVersion`.
    case schemaNewerThanBinary(databaseVersion: Int, newestKnownVersion: Int)
    /// The migration list itself is wrong (a duplicate or non-positive version).
    case invalidMigrations(String)
    /// A write job ended the writer's transaction itself (COMMIT or ROLLBACK in a job):
    /// the outcome of that job and those batched before it is unknown.
    case jobEndedTransaction
    /// A `writeUnbatched` body returned with a transaction open; it was rolled back.
    case transactionLeftOpen
    /// SQLite would not switch the file to WAL (`journal_mode` stayed `journalMode`).
    case walUnavailable(journalMode: String)
    /// A file-system call on `path` failed with `errno`.
    case fileSystem(operation: String, path: String, errno: Int32)

    /// A short stable label for metrics and logs (no free text).
    public var label: String {
        switch self {
        case .overloaded: "overloaded"
        case .closed: "closed"
        case .writeFromWriterThread: "write_from_writer_thread"
        case .schemaNewerThanBinary: "schema_newer_than_binary"
        case .invalidMigrations: "invalid_migrations"
        case .jobEndedTransaction: "job_ended_transaction"
        case .transactionLeftOpen: "transaction_left_open"
        case .walUnavailable: "wal_unavailable"
        case .fileSystem: "file_system"
        }
    }

    public var description: String {
        switch self {
        case .overloaded(let depth, let capacity):
            "the database write queue is full (\(depth) of \(capacity) waiting); try again later"
        case .closed:
            "the database is closed"
        case .writeFromWriterThread:
            "a blocking write was called from inside a write job (it would wait for itself)"
        case .schemaNewerThanBinary(let db, let known):
            "the database schema is at version \(db), but this binary knows migrations only up to "
                + "version \(known): it was written by a newer Herald; run that version or restore a backup"
        case .invalidMigrations(let why):
            "invalid migration list: \(why)"
        case .jobEndedTransaction:
            "a write job ended the writer's transaction itself (COMMIT/ROLLBACK inside a job)"
        case .transactionLeftOpen:
            "an unbatched write returned with a transaction still open; it was rolled back"
        case .walUnavailable(let mode):
            "SQLite could not switch the database to WAL mode (journal_mode is \(mode))"
        case .fileSystem(let operation, let path, let errno):
            "\(operation) \(path) failed: errno \(errno)"
        }
    }
}
