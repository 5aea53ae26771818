/// How an `HTTPServer` listens and what it tolerates. Every field has a default fit for
/// Herald's API on loopback; `validate()` runs in `HTTPServer.init`.
public struct HTTPServerConfig: Sendable {
    /// An IP literal, IPv4 (`0.0.0.0`, `127.0.0.1`) or IPv6 (`::1`, `::`, also in brackets),
    /// or `localhost` (taken as 127.0.0.1). Default `127.0.0.1`. Names are not resolved. An
    /// IPv6 address listens on IPv6 only (`::` does not take IPv4 clients).
    public var host: String
    /// The TCP port; 0 (the default) asks the kernel for a free one — read `HTTPServer.port`.
    public var port: UInt16
    /// libmicrohttpd worker threads (`MHD_OPTION_THREAD_POOL_SIZE`, each running epoll).
    /// Handlers run on them, so this is also how many handlers can block at once. Default 4.
    public var threads: Int
    /// Open connections at most, enforced by the accept policy (`ConnectionBook`). At the
    /// cap a new connection still gets in: the connection idle the longest (between
    /// requests, the accepting worker's own first; or else one whose request is still
    /// arriving) is closed to make room; one
    /// whose handler runs or whose response is being sent is never closed for this. With
    /// nothing to close, the new connection is closed at once (counted as refused,
    /// `connection_limit`). Reclaimed connections hold their descriptor until their worker
    /// closes them, at most `closingAllowance` more. Default 1024; must be at least
    /// `threads`.
    public var maxConnections: Int
    /// Open connections per client IP address at most (IPv4, or a whole IPv6 address);
    /// beyond it a new connection is closed at once (counted as refused, `per_ip_limit`).
    /// 0 (the default) means no limit — `herald serve` sets 128.
    public var perIPConnectionLimit: Int
    /// A connection that sends or receives nothing for this long is closed (idle keep-alive
    /// connections, and clients that stall in the middle of a request: slowloris). Default
    /// 30. A client dripping a byte at a time keeps its connection, bounded only by
    /// `connectionMemoryLimit` for its headers.
    public var connectionTimeoutSeconds: Int
    /// The largest request body accepted; larger ones get 413 `request_too_large`. Default
    /// 1 MiB.
    public var maxBodyBytes: Int
    /// libmicrohttpd's memory pool per connection (`MHD_OPTION_CONNECTION_MEMORY_LIMIT`):
    /// it bounds the request line plus headers (beyond it: 414 or 431 from libmicrohttpd).
    /// Default 32 KiB.
    public var connectionMemoryLimit: Int
    /// How long `stop()` waits for requests in flight to finish before closing them anyway.
    /// Default 10 s.
    public var shutdownGraceSeconds: Double

    /// Descriptors beyond `maxConnections` that reclaimed connections may still hold while
    /// their workers close them (beyond that, new connections are refused instead): the
    /// server holds at most `maxConnections + closingAllowance` sockets. The larger of
    /// `maxConnections` and 32 per worker, at most `maxClosingAllowance`: a worker accepts up
    /// to 10 connections per turn of its event loop before it closes the ones it reclaimed
    /// the turn before, and a loaded machine may delay a turn.
    public var closingAllowance: Int { min(max(maxConnections, 32 * threads), Self.maxClosingAllowance) }
    /// 256: a flood of new connections at the cap reclaims faster than busy workers close
    /// (64 was exceeded within 25 ms by 600 connections on 2 cores; 256 was not).
    public static let maxClosingAllowance = 256

    public init(
        host: String = "127.0.0.1", port: UInt16 = 0, threads: Int = 4, maxConnections: Int = 1024,
        perIPConnectionLimit: Int = 0, connectionTimeoutSeconds: Int = 30, maxBodyBytes: Int = 1 << 20,
        connectionMemoryLimit: Int = 32 << 10, shutdownGraceSeconds: Double = 10
    ) {
        self.host = host
        self.port = port
        self.threads = threads
        self.maxConnections = maxConnections
        self.perIPConnectionLimit = perIPConnectionLimit
        self.connectionTimeoutSeconds = connectionTimeoutSeconds
        self.maxBodyBytes = maxBodyBytes
        self.connectionMemoryLimit = connectionMemoryLimit
        self.shutdownGraceSeconds = shutdownGraceSeconds
    }

    /// Throws `HTTPServerError.invalidConfig` naming the first field out of range.
    public func validate() throws(HTTPServerError) {
        func check(_ ok: Bool, _ field: String, _ rule: String) throws(HTTPServerError) {
            if !ok { throw .invalidConfig(field: field, reason: rule) }
        }
        try check((1...1024).contains(threads), "threads", "must be 1…1024")
        try check(
            maxConnections >= threads && maxConnections <= Int(UInt32.max), "maxConnections",
            "must be at least threads")
        try check(
            perIPConnectionLimit >= 0 && perIPConnectionLimit <= Int(UInt32.max), "perIPConnectionLimit",
            "must be 0 (none) or positive")
        try check(
            connectionTimeoutSeconds >= 1 && connectionTimeoutSeconds <= 86_400, "connectionTimeoutSeconds",
            "must be 1…86400")
        try check(maxBodyBytes >= 0, "maxBodyBytes", "must not be negative")
        try check(connectionMemoryLimit >= 4096, "connectionMemoryLimit", "must be at least 4096")
        try check(
            shutdownGraceSeconds >= 0 && shutdownGraceSeconds.isFinite, "shutdownGraceSeconds",
            "must be 0 or positive")
    }
}
