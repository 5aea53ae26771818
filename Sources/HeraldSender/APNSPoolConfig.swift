import HeraldCore
import HeraldNet

/// Configuration of one connection pool to one APNs host.
public struct APNSPoolConfig: Sendable {
    /// Host and port (token pushes: api.push.apple.com:443; the simulator: 127.0.0.1:…).
    public var target: HostPort
    /// Name to verify in the certificate (default: the target host).
    public var serverName: String?
    /// PEM file of trusted roots (the simulator's certificate); nil: system store.
    public var caFile: String?
    /// Connections kept open (APNs: many connections improve throughput, §1.3).
    public var connections: Int = 4
    /// Upper bound on streams per connection; the peer's SETTINGS_MAX_CONCURRENT_STREAMS
    /// (which APNs changes) always applies below it.
    public var maxStreamsPerConnection: Int = 1000
    /// Requests accepted but not finished (queued, in flight, waiting to retry) before
    /// `submit` blocks its caller. Default: 2 × connections × maxStreamsPerConnection.
    public var maxPending: Int?
    public var retry = RetryPolicy()
    /// Backoff between reconnects of one connection slot (reconnect storms look like a
    /// denial-of-service attack to Apple, §1.3).
    public var reconnect = Backoff(base: 0.1, cap: 30)
    public var http2 = HTTP2ClientConfig()
    /// A label for metrics and logs: "token", "broadcast", "management".
    public var name: String = "token"

    public init(target: HostPort) { self.target = target }

    var pendingLimit: Int { maxPending ?? max(64, 2 * connections * maxStreamsPerConnection) }
}
