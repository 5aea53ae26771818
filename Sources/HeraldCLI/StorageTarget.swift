import HeraldPostgres
import HeraldPostgresStore
import HeraldSQL
import HeraldStore

/// Which storage `HERALD_DB` / `--db` names: a `postgresql://` or `postgres://` URL selects
/// PostgreSQL (libpq's URL syntax; the password from `PGPASSWORD` or `~/.pgpass`, never in
/// the URL), anything else is a SQLite file path.
enum StorageTarget: Equatable {
    case sqlite(path: String)
    case postgres(url: String)

    init(_ db: String) {
        let lower = db.lowercased()
        self = lower.hasPrefix("postgresql://") || lower.hasPrefix("postgres://") ? .postgres(url: db) : .sqlite(path: db)
    }

    var isPostgres: Bool {
        if case .postgres = self { return true }
        return false
    }

    /// What logs and messages show: the path, or the URL with any password masked.
    var display: String {
        switch self {
        case .sqlite(let path): path
        case .postgres(let url): PostgresConnectionString.redact(url)
        }
    }

    /// Where the generated admin token is kept unless given: beside a SQLite file; in the
    /// working directory for PostgreSQL (a URL is no place for a file).
    var defaultAdminTokenFile: String {
        switch self {
        case .sqlite(let path): path + ".admin-token"
        case .postgres: "./herald.admin-token"
        }
    }

    /// Where the key sealing webhook secrets is kept unless given (as the admin token).
    var defaultWebhookKeyFile: String {
        switch self {
        case .sqlite(let path): path + ".webhook-key"
        case .postgres: "./herald.webhook-key"
        }
    }

    /// An opened storage, migrated, and how to close it.
    struct Opened {
        let storage: any HeraldStorage
        let close: @Sendable () -> Void
        /// The SQLite store, when that is the backend (its own metrics, backups).
        let sqlite: Store?
    }

    /// Opens the storage: a SQLite file is created or migrated; a PostgreSQL database must
    /// already have exactly this binary's schema (`herald migrate` applies it; see
    /// docs/postgres.md, "Schema and start-up"). Throws `CommandFailure` with what went
    /// wrong (no password in it).
    func open(sqliteOptions: DatabaseOptions = DatabaseOptions(), leaseSeconds: Int = 15) throws -> Opened {
        do {
            switch self {
            case .sqlite(let path):
                let s = try Store(path: path, options: sqliteOptions)
                return Opened(storage: s, close: { s.close() }, sqlite: s)
            case .postgres(let url):
                let s = try PostgresStore(url: url, leaseDuration: .seconds(leaseSeconds), migrate: false)
                return Opened(storage: s, close: { s.close() }, sqlite: nil)
            }
        } catch let e as StoreError {
            throw CommandFailure("\(display): \(e.description)")
        } catch {
            throw CommandFailure("cannot open the database \(display): \(error)")
        }
    }

    /// Applies the migrations the database lacks; returns those applied now and the
    /// newest this binary knows.
    func migrate() throws -> (applied: [Int], schema: Int) {
        switch self {
        case .sqlite(let path): (try Store.migrate(path: path), Store.migrations.map(\.version).max() ?? 0)
        case .postgres(let url): (try PostgresStore.migrate(url: url), PostgresStore.migrationVersions.max() ?? 0)
        }
    }
}
