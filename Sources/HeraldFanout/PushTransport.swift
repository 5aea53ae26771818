import HeraldAPNS
import HeraldSender

/// What the scheduler needs from a sender: hand over requests without blocking. The pool
/// implements it; tests may use a fake (style: the scheduler talks to the sender through a
/// protocol).
public protocol PushTransport: AnyObject, Sendable {
    /// Accepts all of `requests`, or none when full (then try again after some complete).
    func trySubmit(_ requests: [APNSRequest]) -> Bool
}

extension APNSClientPool: PushTransport {}

/// The senders per APNs environment: tokens and channels never cross environments
/// (reference §1.1, §8.1).
public protocol PushTransports: AnyObject, Sendable {
    /// Token pushes to `environment`.
    func tokens(_ environment: APNSEnvironment) -> PushTransport
    /// Broadcast pushes to `environment` (nil: not configured).
    func broadcast(_ environment: APNSEnvironment) -> PushTransport?
    /// Opens the connections for `environment` ahead of the first event, so the first push
    /// does not wait for TCP, TLS and APNs' first-request handshake.
    func prepare(_ environment: APNSEnvironment)
    /// Token pushes for `bundleID` in `environment`: with several Apple teams, the
    /// connections of the team that owns the bundle (reference §1.3). Default: `tokens(_:)`.
    func tokens(_ environment: APNSEnvironment, bundleID: String) -> PushTransport
    /// Broadcast pushes for `bundleID` in `environment`. Default: `broadcast(_:)`.
    func broadcast(_ environment: APNSEnvironment, bundleID: String) -> PushTransport?
    /// Opens the connections that will carry `bundleID` in `environment`. Default:
    /// `prepare(_:)`.
    func prepare(_ environment: APNSEnvironment, bundleID: String)
}

extension PushTransports {
    public func prepare(_ environment: APNSEnvironment) {}
    public func tokens(_ environment: APNSEnvironment, bundleID: String) -> PushTransport { tokens(environment) }
    public func broadcast(_ environment: APNSEnvironment, bundleID: String) -> PushTransport? { broadcast(environment) }
    public func prepare(_ environment: APNSEnvironment, bundleID: String) { prepare(environment) }
}

/// One sender for every environment (tests, and the simulator, which plays both).
public final class SharedTransports: PushTransports {
    let tokenTransport: PushTransport
    let broadcastTransport: PushTransport?

    public init(tokens: PushTransport, broadcast: PushTransport?) {
        tokenTransport = tokens
        broadcastTransport = broadcast
    }

    public func tokens(_ environment: APNSEnvironment) -> PushTransport { tokenTransport }
    public func broadcast(_ environment: APNSEnvironment) -> PushTransport? { broadcastTransport }
}

/// Answers every request at once with a configuration failure (no APNs credentials): the
/// events fail with a reason that says what to configure, instead of waiting forever.
public final class UnconfiguredTransport: PushTransport {
    let reason: APNSReason

    public init(reason: APNSReason = .missingProviderToken) { self.reason = reason }

    public func trySubmit(_ requests: [APNSRequest]) -> Bool {
        for r in requests { r.template.sink.apnsCompleted(r, result: .outcome(.failConfig(reason: reason, status: 0), nil)) }
        return true
    }
}

/// Senders from the process's APNs pools (or refusals when a pool cannot be opened): the
/// bundle picks its team's pools.
public final class PoolTransports: PushTransports {
    let pools: APNSPools
    let unavailable = UnconfiguredTransport(reason: .connectionLost)
    /// A bundle no team covers (the API refuses such channels; one made before the teams
    /// file changed fails its events with this reason).
    let uncovered = UnconfiguredTransport(reason: .topicDisallowed)

    public init(pools: APNSPools) { self.pools = pools }

    public func tokens(_ environment: APNSEnvironment, bundleID: String) -> PushTransport {
        guard case .team = pools.routing.team(for: bundleID) else { return uncovered }
        return pools.pool(.token, environment, bundleID: bundleID) ?? unavailable
    }

    public func broadcast(_ environment: APNSEnvironment, bundleID: String) -> PushTransport? {
        guard case .team = pools.routing.team(for: bundleID) else { return uncovered }
        return pools.pool(.broadcast, environment, bundleID: bundleID)
    }

    public func prepare(_ environment: APNSEnvironment, bundleID: String) {
        _ = pools.pool(.token, environment, bundleID: bundleID)
    }

    public func tokens(_ environment: APNSEnvironment) -> PushTransport {
        pools.pool(.token, environment) ?? unavailable
    }

    public func broadcast(_ environment: APNSEnvironment) -> PushTransport? {
        pools.pool(.broadcast, environment)
    }

    public func prepare(_ environment: APNSEnvironment) {
        _ = pools.pool(.token, environment)
    }
}

/// Every push refused: Herald runs without APNs credentials.
public final class NoAPNSTransports: PushTransports {
    let refuse = UnconfiguredTransport(reason: .missingProviderToken)
    public init() {}
    public func tokens(_ environment: APNSEnvironment) -> PushTransport { refuse }
    public func broadcast(_ environment: APNSEnvironment) -> PushTransport? { refuse }
}
