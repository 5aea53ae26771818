import CPostgres
import Foundation

/// A transaction's isolation level (PostgreSQL's `BEGIN ISOLATION LEVEL …`).
public enum IsolationLevel: Sendable {
    /// Each statement sees what was committed before it began (PostgreSQL's default).
    case readCommitted
    /// One snapshot for the whole transaction; a conflicting update fails with 40001.
    case repeatableRead
    /// As if the transactions ran one at a time; a conflict fails with 40001.
    case serializable

    var beginSQL: String {
        switch self {
        case .readCommitted: "BEGIN ISOLATION LEVEL READ COMMITTED"
        case .repeatableRead: "BEGIN ISOLATION LEVEL REPEATABLE READ"
        case .serializable: "BEGIN ISOLATION LEVEL SERIALIZABLE"
        }
    }
}

extension PostgresConnection {
    /// Runs `body` in a transaction: COMMIT when it returns, ROLLBACK when it throws. A
    /// serialization failure (40001) or deadlock (40P01), from `body` or from COMMIT, rolls
    /// back and runs `body` again, up to `attempts` times in all, after a short random
    /// pause; so `body` must do nothing outside the database it cannot repeat.
    ///
    /// Inside an open transaction this becomes a savepoint (no retry: only the outermost
    /// transaction can be repeated).
    /// - Throws: what `body` throws (after rolling back), `PostgresError` from BEGIN or
    ///   COMMIT, and `.server` 25P02 when COMMIT found the transaction aborted by an
    ///   earlier error that `body` swallowed (PostgreSQL then rolls back silently).
    /// - Thread: the connection's thread.
    public func transaction<T>(
        _ isolation: IsolationLevel = .readCommitted, attempts: Int = 3, _ body: (PostgresConnection) throws -> T
    ) throws -> T {
        if isInTransaction { return try savepoint(body) }
        var attempt = 1
        while true {
            do {
                try command(isolation.beginSQL)
                let result = try body(self)
                let commit = try command("COMMIT")
                if commit.commandStatus == "ROLLBACK" {
                    throw PostgresError(
                        kind: .server, sqlState: .inFailedTransaction,
                        message: "COMMIT rolled back: an earlier statement of the transaction failed", target: target)
                }
                return result
            } catch {
                rollbackIfNeeded()
                let retryable = (error as? PostgresError)?.sqlState?.isRetryableTransaction == true
                guard retryable, attempt < attempts else { throw error }
                attempt += 1
                // A few milliseconds, random, so two victims of one deadlock do not meet again.
                usleep(UInt32.random(in: 1_000...(5_000 * UInt32(attempt))))
            }
        }
    }

    /// Runs `body` inside a savepoint: RELEASE when it returns, ROLLBACK TO when it throws.
    func savepoint<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        nextStatementNumber += 1
        let name = "herald_sp_\(nextStatementNumber)"
        try command("SAVEPOINT \(name)")
        do {
            let result = try body(self)
            try command("RELEASE SAVEPOINT \(name)")
            return result
        } catch {
            _ = try? command("ROLLBACK TO SAVEPOINT \(name)")
            throw error
        }
    }

    /// Rolls back the open transaction, if any; errors are ignored (the session may be
    /// gone, and there is nothing better to do on an error path).
    func rollbackIfNeeded() {
        guard let conn = handle, PQstatus(conn) == CONNECTION_OK, isInTransaction else { return }
        _ = try? command("ROLLBACK")
    }
}
