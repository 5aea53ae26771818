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

/// The connection pools of one Herald process: token, broadcast and management pools per
/// environment, each opened on first use (a production-only deployment never connects to
/// the sandbox). Thread-safe.
public final class APNSPools: Sendable {
    public enum Kind: String, Sendable { case token, broadcast, management }

    struct Key: Hashable {
        let kind: Kind
        let env: APNSEnvironment
    }

    public let settings: APNSSettings
    let jwt: JWTProvider
    let logger: Logger
    let metrics: MetricsRegistry
    private let pools = Locked<[Key: APNSClientPool]>([:])
    private let failures = Locked<[Key: String]>([:])

    public init(settings: APNSSettings, jwt: JWTProvider, logger: Logger, metrics: MetricsRegistry) {
        self.settings = settings
        self.jwt = jwt
        self.logger = logger
        self.metrics = metrics
    }

    /// The pool for `kind` in `env`, created now if needed. Nil if it cannot be created
    /// (an unreadable CA file); the reason is logged once.
    public func pool(_ kind: Kind, _ env: APNSEnvironment) -> APNSClientPool? {
        let key = Key(kind: kind, env: env)
        return pools.withLock { p -> APNSClientPool? in
            if let existing = p[key] { return existing }
            var c = APNSPoolConfig(target: settings.target(kind, env))
            c.caFile = settings.caFile
            c.name = kind == .token ? "token_\(env.rawValue)" : "\(kind.rawValue)_\(env.rawValue)"
            c.connections = kind == .token ? settings.connections : 1
            c.maxStreamsPerConnection = settings.maxStreamsPerConnection
            c.retry = settings.retry
            do {
                let pool = try APNSClientPool(config: c, jwt: jwt, logger: logger, metrics: metrics)
                p[key] = pool
                logger.info(
                    "apns.pool_opened",
                    ["pool": .string(c.name), "target": .string(c.target.description), "connections": .int(Int64(c.connections))])
                return pool
            } catch {
                let first = failures.withLock { f in
                    defer { f[key] = "\(error)" }
                    return f[key] == nil
                }
                if first { logger.error("apns.pool_failed", ["pool": .string(c.name), "error": .string("\(error)")]) }
                return nil
            }
        }
    }

    /// Channel management for `env`.
    public func channelManager(_ env: APNSEnvironment) -> APNSChannelManager? {
        pool(.management, env).map { APNSChannelManager(pool: $0) }
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
