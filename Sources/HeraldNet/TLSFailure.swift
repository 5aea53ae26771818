import HeraldCrypto

/// Why TLS failed, with OpenSSL's own error kept whole (its code and queue), not
/// flattened into a string.
public enum TLSFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// An OpenSSL call failed (setting up a context, the record layer, the handshake).
    case openSSL(OpenSSLError)
    /// The peer's certificate did not verify: X.509 verification `code`
    /// (`X509_V_ERR_*`) and OpenSSL's text for it.
    case certificate(code: Int, reason: String, OpenSSLError)
    /// A file (CA, certificate chain, private key) could not be loaded.
    case file(path: String, OpenSSLError)
    /// The private key does not belong to the certificate.
    case keyMismatch
    /// The socket failed under TLS with `errno`.
    case system(errno: Int32, OpenSSLError)
    /// The peer did not select ALPN `h2` (reference §1.2).
    case alpn(selected: String?)

    public var description: String {
        switch self {
        case .openSSL(let e): e.description
        case .certificate(let code, let reason, let e): "\(e) (certificate: \(reason), X509 code \(code))"
        case .file(let path, let e): "cannot load \(path): \(e)"
        case .keyMismatch: "the private key does not match the certificate"
        case .system(let errno, let e): "\(e) (errno \(errno))"
        case .alpn(let selected): "the peer did not select ALPN h2 (got \(selected ?? "none"))"
        }
    }

    public static func == (a: TLSFailure, b: TLSFailure) -> Bool {
        switch (a, b) {
        case (.openSSL(let x), .openSSL(let y)): same(x, y)
        case (.certificate(let c1, let r1, let x), .certificate(let c2, let r2, let y)): c1 == c2 && r1 == r2 && same(x, y)
        case (.file(let p1, let x), .file(let p2, let y)): p1 == p2 && same(x, y)
        case (.keyMismatch, .keyMismatch): true
        case (.system(let e1, let x), .system(let e2, let y)): e1 == e2 && same(x, y)
        case (.alpn(let s1), .alpn(let s2)): s1 == s2
        default: false
        }
    }

    private static func same(_ x: OpenSSLError, _ y: OpenSSLError) -> Bool {
        x.operation == y.operation && x.code == y.code && x.message == y.message
    }
}
