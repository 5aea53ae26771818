import Glibc

/// Why an `HTTPServer` could not be created or started. Request-level problems are never
/// thrown: they become responses.
public enum HTTPServerError: Error, Sendable, Equatable, CustomStringConvertible {
    /// `host` is not an IP literal (nor `localhost`).
    case invalidHost(String)
    /// A configuration field is out of range.
    case invalidConfig(field: String, reason: String)
    /// Another socket already listens on this address and port (`EADDRINUSE`).
    case addressInUse(host: String, port: UInt16)
    /// A socket call failed for another reason (`EACCES` for a privileged port, `EADDRNOTAVAIL`
    /// for an address this machine does not have, …).
    case socket(operation: String, errno: Int32)
    /// `MHD_start_daemon` refused; `message` is libmicrohttpd's last log line, if any.
    case startFailed(message: String)
    /// `start()` after `stop()`: a server is not restarted, create a new one.
    case stopped

    public var description: String {
        switch self {
        case .invalidHost(let h): "invalid listen host \"\(h)\": expected an IPv4 or IPv6 literal or localhost"
        case .invalidConfig(let f, let r): "invalid HTTP server configuration: \(f) \(r)"
        case .addressInUse(let h, let p): "address already in use: \(h) port \(p)"
        case .socket(let op, let e): "\(op) failed: \(String(cString: strerror(e))) (errno \(e))"
        case .startFailed(let m): "libmicrohttpd could not start: \(m.isEmpty ? "no reason given" : m)"
        case .stopped: "the HTTP server was stopped; create a new one"
        }
    }
}
