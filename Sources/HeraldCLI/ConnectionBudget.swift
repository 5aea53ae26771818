/// How many API connections `herald serve` allows: sized from the process's file limit
/// (RLIMIT_NOFILE, its soft limit raised to the hard one at start) less what the rest of
/// the process may hold open. Documented in docs/operations.md ("Connection limits").
struct ConnectionBudget: Equatable {
    /// Descriptors kept for everything but API connections: standard streams, the SQLite
    /// writer and readers (database, WAL and shared-memory files each), the metrics
    /// listener (64 connections and its closing allowance), APNs broadcast and management
    /// connections, listen sockets, certificate, key and /proc files.
    static let fixedReserve = 256
    /// Per API worker thread: its epoll and wake-up descriptors, and a SQLite reader of its
    /// own when every pooled one is busy.
    static let perHTTPThread = 16
    /// Per token-push connection setting: one per environment, doubled for a reconnect
    /// that overlaps the connection it replaces.
    static let perAPNSConnection = 4
    /// The default never goes above this, however high the file limit: memory, not
    /// descriptors, is then what bounds idle connections.
    static let defaultCeiling = 65_536

    /// The soft file limit in force (after raising it).
    var fileLimit: Int
    /// Descriptors kept back: `fixedReserve + perHTTPThread × threads + perAPNSConnection ×
    /// APNs connections + HTTPServerConfig.maxClosingAllowance` (reclaimed API connections still
    /// closing).
    var reserve: Int
    /// The cap the file limit allows: `fileLimit − reserve` (at least the thread count).
    var allowed: Int
    /// The cap in force: `--http-max-connections`, or else `min(allowed, defaultCeiling)`.
    var maxConnections: Int
    /// True when `maxConnections` was given (flag or environment).
    var explicit: Bool

    enum Failure: Error, Equatable, CustomStringConvertible {
        case aboveFileLimit(requested: Int, allowed: Int, fileLimit: Int, reserve: Int)

        var description: String {
            switch self {
            case .aboveFileLimit(let requested, let allowed, let fileLimit, let reserve):
                "--http-max-connections \(requested) needs a file limit of at least \(requested + reserve) "
                    + "(RLIMIT_NOFILE is \(fileLimit), \(reserve) kept for the rest of herald, so at most \(allowed)): "
                    + "raise the hard limit (systemd LimitNOFILE=, docker --ulimit nofile=, ulimit -Hn) or lower the setting"
            }
        }
    }

    /// The budget for a file limit. Throws `.aboveFileLimit` when `requested` is more than
    /// the limit allows: an explicit setting is never cut down silently.
    static func plan(fileLimit: Int, requested: Int?, httpThreads: Int, apnsConnections: Int, closingAllowance: Int)
        throws(Failure) -> ConnectionBudget
    {
        let reserve = fixedReserve + perHTTPThread * httpThreads + perAPNSConnection * apnsConnections + closingAllowance
        let allowed = max(fileLimit - reserve, httpThreads)
        if let requested {
            guard requested <= allowed else {
                throw .aboveFileLimit(requested: requested, allowed: allowed, fileLimit: fileLimit, reserve: reserve)
            }
            return ConnectionBudget(
                fileLimit: fileLimit, reserve: reserve, allowed: allowed, maxConnections: max(requested, httpThreads),
                explicit: true)
        }
        return ConnectionBudget(
            fileLimit: fileLimit, reserve: reserve, allowed: allowed, maxConnections: min(allowed, defaultCeiling),
            explicit: false)
    }

    /// True when the file limit leaves API connections less room than the old fixed
    /// default (1024): worth a warning at start.
    var isLow: Bool { allowed < 1024 }
}
