import Foundation
import HeraldCore
import HeraldCrypto
import HeraldPostgres
import HeraldStore

/// Herald's storage protocols on PostgreSQL (issue 14): the same behaviour as SQLite's
/// `Store`, for any number of `herald serve` workers on one database. Calls run on pooled
/// connections, each in its own short transaction; nothing holds a transaction open across
/// a call out of the store (the storage API never waits for APNs). The queued writes
/// (`completion` variants) run one at a time on the store's writer queue, in the order
/// they were queued.
///
/// Shards: a subscription's shard is `Shards.shard(of:)`; a worker (`workerID`, new per
/// store) leases (channel, shard)s with `FOR UPDATE SKIP LOCKED` by the database's clock,
/// and every progress write for a shard is fenced by the (owner, attempt) it was granted.
///
/// Thread-safe. Methods block the calling thread (never call them from an event loop).
public final class PostgresStore: Sendable {
    public let clock: WallClock
    /// The connection target as logs show it (no password).
    public let target: String
    /// This store's identity as a lease owner.
    public let workerID: WorkerID
    /// How long a lease holds unless renewed (`HERALD_LEASE_SECONDS`).
    public let leaseDuration: Duration
    /// How a registration batch writes its rows (`PostgresStore+Ingest.swift`).
    public let ingestPath: IngestPath

    let pool: ConnectionPool
    /// The queued writes, applied in queue order.
    let writer = DispatchQueue(label: "herald.postgres.writer")
    /// The leases this store holds: per channel, the attempt of each shard.
    let held = Locked<[Int64: [Int64: Int64]]>([:])

    /// Connects and, with `migrate` (tests, tools), applies the migrations the database
    /// lacks (several at once: one applies, the others wait); without it (`herald serve`)
    /// only checks that the schema is exactly this binary's (`SchemaStatus`). Throws
    /// `StoreError.schema` for a database newer than this binary (and, without `migrate`,
    /// for one without the schema or behind it, saying to run `herald migrate`),
    /// `StoreError.unavailable` when the database cannot be reached, `PostgresError`
    /// `.configuration` for an unusable URL.
    public init(
        url: String, clock: WallClock = SystemClock(), connections: Int = 8, leaseDuration: Duration = .seconds(15),
        statementTimeout: Duration = .seconds(30), migrate: Bool = true, ingestPath: IngestPath = .copyNew
    ) throws {
        let options = PostgresOptions(
            connection: try PostgresConnectionString(url), statementTimeout: statementTimeout, applicationName: "herald")
        self.clock = clock
        self.target = options.connection.redacted
        self.workerID = WorkerID.random()
        self.leaseDuration = leaseDuration
        self.ingestPath = ingestPath
        pool = ConnectionPool(options: options, capacity: connections)
        let target = self.target
        try Self.translating {
            try pool.with { c in
                if migrate {
                    _ = try Self.migrate(c)
                } else if let refusal = SchemaStatus(applied: try c.appliedMigrations(), known: Self.migrationVersions).refusal(
                    target: target)
                {
                    throw StoreError.schema(refusal)
                }
            }
        }
        // Counted among the live workers from the start (the others size their share by it).
        try? heartbeat()
    }

    /// Applies `Migrations/postgres/*.sql` (embedded at build time) to the database at
    /// `url` and returns the versions applied now. Throws as `init`.
    public static func migrate(url: String) throws -> [Int] {
        let c = try PostgresConnection(PostgresOptions(connection: try PostgresConnectionString(url)))
        defer { c.close() }
        return try translating { try migrate(c) }
    }

    static func migrate(_ c: PostgresConnection) throws -> [Int] {
        do {
            return try c.migrate(PostgresMigration.herald)
        } catch let e as PostgresMigrationError {
            if case .schemaNewerThanBinary(let have, let known) = e {
                throw StoreError.schema(
                    "the PostgreSQL database is at schema version \(have), newer than this herald knows (\(known)); run a newer herald")
            }
            throw StoreError.schema("\(e)")
        } catch let e as PostgresError where e.sqlState == SQLState("P0001") {
            // A migration that refuses to run (RAISE EXCEPTION) says why in its message.
            throw StoreError.schema(e.message)
        }
    }

    /// The migrations this binary knows.
    public static var migrationVersions: [Int] { PostgresMigration.herald.map(\.version) }

    /// Versions recorded in the database.
    public func appliedMigrations() throws -> [Int] { try read { c in try c.appliedMigrations() } }

    /// True when the database answers and every known migration is applied (`/readyz`).
    public func isReady() -> Bool {
        guard let applied = try? appliedMigrations() else { return false }
        return Set(applied).isSuperset(of: Self.migrationVersions)
    }

    /// Hands this worker's leases back and closes the connections.
    public func close() {
        // The queued checkpoints first: written under the leases still held, they are where
        // the next holder resumes.
        writer.sync {}
        releaseAllLeases()
        pool.close()
    }

    /// Runs `body` in a transaction on a pooled connection, translating failures.
    func write<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        try Self.translating { try pool.with { c in try c.transaction { c in try body(c) } } }
    }

    /// Runs `body` (reads, or one self-contained statement) on a pooled connection.
    func read<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        try Self.translating { try pool.with { c in try body(c) } }
    }

    /// Queues `body` (run as `write`) on the writer; `completion` gets nil once committed,
    /// or the error.
    func queue(_ body: @escaping @Sendable (PostgresConnection) throws -> Void, _ completion: @escaping @Sendable (Error?) -> Void) {
        writer.async { [self] in
            do {
                try write(body)
                completion(nil)
            } catch {
                completion(error)
            }
        }
    }

    /// The one place PostgreSQL failures become `StoreError` (503s the API can answer).
    static func translating<T>(_ work: () throws -> T) throws -> T {
        do {
            return try work()
        } catch let e as StoreError {
            throw e
        } catch let e as PostgresError {
            throw StoreError.from(e)
        }
    }

    /// A random identifier with a prefix, as SQLite's store makes them: `evt_…`, `key_…`.
    static func newID(_ prefix: String) -> String { Identifier.random(prefix: prefix) }
}

extension StoreError {
    /// A PostgreSQL failure as the API answers it: the session gone or a timeout is
    /// `unavailable` (503), a lock or serialization conflict after retries `overloaded`.
    static func from(_ e: PostgresError) -> StoreError {
        if e.isConnectionLoss { return .unavailable("PostgreSQL unreachable") }
        switch e.sqlState {
        case .some(.queryCanceled): return .unavailable("PostgreSQL statement timeout")
        case .some(.serializationFailure), .some(.deadlockDetected), .some(.lockNotAvailable): return .overloaded
        case .some(let s) where s.errorClass == "53": return .unavailable("PostgreSQL out of resources (\(s))")
        case .some(let s) where s == SQLState("25006"): return .unavailable("read-only PostgreSQL")
        case .some(let s): return .unavailable("PostgreSQL error \(s)")
        case .none: return .unavailable("PostgreSQL \(e.kind)")
        }
    }
}
