import Foundation
import HeraldAPNS
import HeraldCore
import HeraldCrypto
import HeraldSQL

/// Herald's registry and event log on one SQLite file (issue #3): channels, subscriptions,
/// events, API keys. Writes go through the database's single writer with group commit;
/// reads use pooled read-only connections (WAL: readers never block the writer).
///
/// Thread-safe. Methods block the calling thread (never call them from an event loop).
public final class Store: Sendable {
    public let db: Database
    public let clock: WallClock
    public let path: String

    /// Opens (creating if needed) and migrates the database. Throws `StoreError.schema` for
    /// a database newer than this binary, or the underlying SQLite error.
    public init(path: String, options: DatabaseOptions = DatabaseOptions(), clock: WallClock = SystemClock()) throws {
        self.path = path
        self.clock = clock
        db = try Database(path: path, options: options)
        do {
            _ = try db.migrate(Self.migrations, clock: clock)
        } catch let e as DatabaseError {
            db.close()
            if case .schemaNewerThanBinary(let have, let known) = e {
                throw StoreError.schema(
                    "the database \(path) is at schema version \(have), newer than this herald knows (\(known)); run a newer herald")
            }
            throw e
        } catch {
            db.close()
            throw error
        }
    }

    /// Applies `Migrations/*.sql` (embedded at build time) without keeping the store open.
    /// Returns the versions applied now.
    public static func migrate(path: String) throws -> [Int] {
        let db = try Database(path: path, options: DatabaseOptions())
        defer { db.close() }
        return try db.migrate(migrations)
    }

    /// The migrations this binary knows, in order.
    public static var migrations: [Migration] {
        EmbeddedMigrations.all.map { Migration(version: $0.version, name: $0.name, sql: $0.sql) }
    }

    /// Versions recorded in the database.
    public func appliedMigrations() throws -> [Int] { try db.appliedMigrations() }

    /// True when the database answers and every known migration is applied (`/readyz`).
    public func isReady() -> Bool {
        guard let applied = try? db.appliedMigrations() else { return false }
        return Set(applied).isSuperset(of: Self.migrations.map(\.version))
    }

    public func close() { db.close() }

    /// Runs a write, translating database failures into `StoreError`.
    func write<T: Sendable>(_ body: @escaping @Sendable (SQLiteConnection) throws -> T) throws -> T {
        try translatingErrors { try db.write(body) }
    }

    /// Runs a read on a pooled connection, translating database failures into `StoreError`.
    func read<T>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        try translatingErrors { try db.read(body) }
    }

    /// The one place database errors become `StoreError` (503s the API can answer).
    private func translatingErrors<T>(_ work: () throws -> T) throws -> T {
        do {
            return try work()
        } catch let e as StoreError {
            throw e
        } catch let e as DatabaseError {
            throw StoreError.from(e)
        } catch let e as SQLiteError {
            throw StoreError.from(e)
        }
    }

    /// A random identifier with a prefix: `evt_…`, `key_…` (base32, 128 bits).
    static func newID(_ prefix: String) -> String { Identifier.random(prefix: prefix) }
}

/// Failures the API turns into HTTP answers: each knows its status and stable code.
public enum StoreError: Error, Sendable, Equatable, CustomStringConvertible {
    case channelExists(String)
    case channelNotFound(String)
    case channelClosed(String)
    case staleTimestamp(given: Int64, last: Int64)
    case futureTimestamp(given: Int64, limit: Int64)
    case activityEnded(String)
    case payloadTooLarge(size: Int, limit: Int, broadcast: Bool)
    case eventNotFound(String)
    case keyNotFound(String)
    case subscriptionNotFound
    /// `send_at` in the past or beyond `PublishRule.maxScheduleAheadSeconds` (422).
    case sendAtOutOfRange(given: Int64, now: Int64, limit: Int64)
    /// Only a `scheduled` event can be cancelled (409 once it is sending or finished).
    case notScheduled(id: String, state: EventState)
    /// The write queue is full: try again (503 + Retry-After).
    case overloaded
    /// The database cannot take writes (disk full, read-only, I/O): 503.
    case unavailable(String)
    case schema(String)

    public var status: Int {
        switch self {
        case .channelExists, .channelClosed, .staleTimestamp, .activityEnded, .notScheduled: 409
        case .channelNotFound, .eventNotFound, .keyNotFound, .subscriptionNotFound: 404
        case .futureTimestamp, .sendAtOutOfRange: 422
        case .payloadTooLarge: 413
        case .overloaded, .unavailable, .schema: 503
        }
    }

    public var code: String {
        switch self {
        case .channelExists: "channel_exists"
        case .channelNotFound, .eventNotFound, .keyNotFound, .subscriptionNotFound: "not_found"
        case .channelClosed: "channel_closed"
        case .staleTimestamp: "stale_timestamp"
        case .futureTimestamp, .sendAtOutOfRange: "invalid_field"
        case .notScheduled: "not_scheduled"
        case .activityEnded: "activity_ended"
        case .payloadTooLarge: "payload_too_large"
        case .overloaded: "overloaded"
        case .unavailable, .schema: "unavailable"
        }
    }

    public var description: String {
        switch self {
        case .channelExists(let id): "channel '\(id)' already exists"
        case .channelNotFound(let id): "no channel '\(id)'"
        case .channelClosed(let id): "channel '\(id)' is closed"
        case .staleTimestamp(let given, let last):
            "aps.timestamp \(given) is not newer than the channel's last event (\(last)): a device would discard it"
        case .futureTimestamp(let given, let limit):
            "aps.timestamp \(given) is too far in the future (more than \(limit) s ahead of the server's clock)"
        case .activityEnded(let id):
            "channel '\(id)' ended its activity: publish a start event before further updates"
        case .payloadTooLarge(let size, let limit, let broadcast):
            "the payload is \(size) bytes; APNs takes at most \(limit) bytes for \(broadcast ? "broadcast" : "token") pushes"
        case .eventNotFound(let id): "no event '\(id)' on this channel"
        case .keyNotFound(let id): "no key '\(id)'"
        case .subscriptionNotFound: "no such subscription"
        case .sendAtOutOfRange(let given, let now, let limit):
            given <= now
                ? "'send_at' \(given) is not in the future (the server's clock says \(now))"
                : "'send_at' \(given) is more than \(limit) s (7 days) ahead of the server's clock (\(now))"
        case .notScheduled(let id, let state):
            "event '\(id)' is \(state.rawValue): only a scheduled event can be cancelled"
        case .overloaded: "the server is busy writing; try again shortly"
        case .unavailable(let why): "the database cannot take writes now (\(why))"
        case .schema(let m): m
        }
    }

    static func from(_ e: DatabaseError) -> StoreError {
        if case .overloaded = e { return .overloaded }
        return .unavailable(e.label)
    }

    static func from(_ e: SQLiteError) -> StoreError {
        if e.isDiskFull { return .unavailable("disk full") }
        if e.isReadOnly { return .unavailable("read-only database") }
        if e.isBusy { return .overloaded }
        if e.isIOError { return .unavailable("I/O error") }
        return .unavailable("SQLite error \(e.code)")
    }
}
