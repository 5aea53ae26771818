import CSystem
import Foundation
import Glibc

/// Transport failures (the only things in the network layer that throw — outcomes of
/// requests are values).
public enum NetError: Error, Sendable, CustomStringConvertible, Equatable {
    /// A system call failed with `errno`.
    case system(String, Int32)
    /// Name resolution failed.
    case resolve(host: String, message: String)
    /// No address of the host accepted a connection.
    case connect(host: String, port: Int, message: String)
    /// A deadline passed (connect, handshake, read).
    case timeout(String)
    /// TLS failed (handshake, verification, ALPN, record layer), OpenSSL's error kept.
    case tls(TLSFailure)
    /// The peer violated HTTP/2 or nghttp2 reported an error (its code and call).
    case http2(HTTP2Error)
    /// The peer closed the connection.
    case closed(String)

    public var description: String {
        switch self {
        case .system(let call, let e): "\(call) failed: \(String(cString: strerror(e))) (errno \(e))"
        case .resolve(let host, let m): "cannot resolve \(host): \(m)"
        case .connect(let host, let port, let m): "cannot connect to \(host):\(port): \(m)"
        case .timeout(let what): "timed out: \(what)"
        case .tls(let m): "TLS: \(m)"
        case .http2(let m): "HTTP/2: \(m)"
        case .closed(let m): "connection closed: \(m)"
        }
    }
}
