import Foundation
import HeraldAPNS
import HeraldCore
import HeraldNet

/// Where and how to reach APNs. Every host can be overridden (the simulator, or Apple's
/// `api-broadcast…` hosts, reference §1.1 [U]).
public struct APNSSettings: Sendable {
    /// Token pushes; nil: Apple's host for the channel's environment, port 443.
    public var tokenHost: HostPort?
    /// Broadcast pushes; nil: the token host.
    public var broadcastHost: HostPort?
    /// Channel management; nil: Apple's management host and port for the environment.
    public var managementHost: HostPort?
    /// Trusted roots for every APNs connection (the simulator's certificate); nil: the
    /// system store.
    public var caFile: String?
    /// Token-push connections per environment.
    public var connections = 4
    public var maxStreamsPerConnection = 1000
    public var retry = RetryPolicy()

    public init() {}

    func target(_ kind: APNSPools.Kind, _ env: APNSEnvironment) -> HostPort {
        switch kind {
        case .token: return tokenHost ?? HostPort(host: env.tokenHost, port: 443)
        case .broadcast: return broadcastHost ?? tokenHost ?? HostPort(host: env.broadcastHost, port: 443)
        case .management:
            return managementHost ?? HostPort(host: env.managementHost, port: env.managementPort)
        }
    }
}

/// One Apple developer team as the pools use it: its signer (key, Key ID, Team ID) and
/// the bundles it covers (nil: every bundle, the single-key configuration).
public struct APNSTeam: Sendable {
    public let jwt: JWTProvider
    public let bundleIDs: Set<String>?

    public init(jwt: JWTProvider, bundleIDs: Set<String>?) {
        self.jwt = jwt
        self.bundleIDs = bundleIDs
    }

    public var teamID: String { jwt.credentials.teamID }
}

/// The connection pools of one Herald process: token, broadcast and management pools per
/// team and environment, each opened on first use (a production-only deployment never
/// connects to the sandbox). APNs binds a connection to one team (reference §1.3), so a
/// team's pools carry only its own JWT and the bundles it covers; `routing` says which
/// team a bundle belongs to. Every pool's metrics carry `team` (a Team ID). Thread-safe.
public final class APNSPools: Sendable {
    public enum Kind: String, Sendable { case token, broadcast, management }

    struct Key: Hashable {
        let kind: Kind
        let env: APNSEnvironment
        let team: String
    }

    public let settings: APNSSettings
    /// Which team sends for which bundle.
    public let routing: APNSTeamRouting
    let teams: [String: APNSTeam]
    let logger: Logger
    let metrics: MetricsRegistry
    private let pools = Locked<[Key: APNSClientPool]>([:])
    private let failures = Locked<[Key: String]>([:])

    /// Pools for several teams (`HERALD_APNS_TEAMS_FILE`, named by `source`). Team IDs
    /// must be distinct.
    public init(settings: APNSSettings, teams: [APNSTeam], source: String?, logger: Logger, metrics: MetricsRegistry) {
        precondition(!teams.isEmpty, "at least one team")
        self.settings = settings
        self.routing = APNSTeamRouting(
            teams: teams.map { .init(teamID: $0.teamID, keyID: $0.jwt.credentials.keyID, bundleIDs: $0.bundleIDs) }, source: source)
        self.teams = Dictionary(teams.map { ($0.teamID, $0) }, uniquingKeysWith: { first, _ in first })
        self.logger = logger
        self.metrics = metrics
    }

    /// Pools for one team that sends for every bundle (the single-key variables).
    public convenience init(settings: APNSSettings, jwt: JWTProvider, logger: Logger, metrics: MetricsRegistry) {
        self.init(settings: settings, teams: [APNSTeam(jwt: jwt, bundleIDs: nil)], source: nil, logger: logger, metrics: metrics)
    }

    /// The pool for `kind` in `env` of the team that sends for `bundleID`, created now if
    /// needed. Nil when no team covers the bundle, or the pool cannot be created (an
    /// unreadable CA file; the reason is logged once).
    public func pool(_ kind: Kind, _ env: APNSEnvironment, bundleID: String) -> APNSClientPool? {
        guard case .team(let id) = routing.team(for: bundleID) else { return nil }
        return pool(kind, env, team: id)
    }

    /// The pool for `kind` in `env` of the first team (with the single-key variables, the
    /// only one).
    public func pool(_ kind: Kind, _ env: APNSEnvironment) -> APNSClientPool? {
        pool(kind, env, team: routing.teams[0].teamID)
    }

    /// The pool for `kind` in `env` of team `teamID` (nil: no such team, or it cannot be
    /// created).
    public func pool(_ kind: Kind, _ env: APNSEnvironment, team teamID: String) -> APNSClientPool? {
        guard let team = teams[teamID] else { return nil }
        let key = Key(kind: kind, env: env, team: teamID)
        return pools.withLock { p -> APNSClientPool? in
            if let existing = p[key] { return existing }
            var c = APNSPoolConfig(target: settings.target(kind, env))
            c.caFile = settings.caFile
            c.name = kind == .token ? "token_\(env.rawValue)" : "\(kind.rawValue)_\(env.rawValue)"
            c.connections = kind == .token ? settings.connections : 1
            c.maxStreamsPerConnection = settings.maxStreamsPerConnection
            c.retry = settings.retry
            // `all-channels` lists up to 10,000 ids of ~25 bytes (reference §5): far over
            // the 64 KiB a push answer needs.
            if kind == .management { c.http2.maxResponseBody = 1 << 20 }
            do {
                let pool = try APNSClientPool(
                    config: c, jwt: team.jwt, logger: logger, metrics: metrics.with(labels: ["team": teamID]))
                p[key] = pool
                logger.info(
                    "apns.pool_opened",
                    [
                        "pool": .string(c.name), "team": .string(teamID), "target": .string(c.target.description),
                        "connections": .int(Int64(c.connections)),
                    ])
                return pool
            } catch {
                let first = failures.withLock { f in
                    defer { f[key] = "\(error)" }
                    return f[key] == nil
                }
                if first {
                    logger.error("apns.pool_failed", ["pool": .string(c.name), "team": .string(teamID), "error": .string("\(error)")])
                }
                return nil
            }
        }
    }

    /// Channel management for `env`: each call goes out on the management pool of the team
    /// that owns its bundle.
    public func channelManager(_ env: APNSEnvironment) -> APNSChannelManager? {
        APNSChannelManager(pools: { [weak self] bundle in self?.pool(.management, env, bundleID: bundle) })
    }

    /// Closes every pool. Not from a pool's loop.
    public func shutdown() {
        let all = pools.withLock { p in
            defer { p.removeAll() }
            return Array(p.values)
        }
        for p in all { p.shutdown() }
    }
}
