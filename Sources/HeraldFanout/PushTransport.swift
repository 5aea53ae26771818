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
}

extension PushTransports {
    public func prepare(_ environment: APNSEnvironment) {}
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

/// Senders from the process's APNs pools (or refusals when a pool cannot be opened).
public final class PoolTransports: PushTransports {
    let pools: APNSPools
    let unavailable = UnconfiguredTransport(reason: .connectionLost)

    public init(pools: APNSPools) { self.pools = pools }

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
