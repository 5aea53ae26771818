import Glibc

/// A parsed listen address: the socket address to bind and its text form.
struct ListenAddress {
    enum Family { case ipv4, ipv6 }

    let family: Family
    /// The host in canonical numeric form (`127.0.0.1`, `::1`).
    let host: String
    private let storage: sockaddr_storage

    /// Parses an IP literal (IPv6 optionally in brackets) or `localhost` → 127.0.0.1.
    /// Names are never resolved: a listen address must not depend on DNS.
    init(host: String, port: UInt16) throws(HTTPServerError) {
        var text = host
        if text == "localhost" { text = "127.0.0.1" }
        if text.hasPrefix("["), text.hasSuffix("]") { text = String(text.dropFirst().dropLast()) }
        var storage = sockaddr_storage()
        if let a4 = Self.parse4(text) {
            withUnsafeMutableBytes(of: &storage) { raw in
                let sin = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in.self)
                sin.pointee.sin_family = sa_family_t(AF_INET)
                sin.pointee.sin_port = port.bigEndian
                sin.pointee.sin_addr = a4
            }
            family = .ipv4
        } else if let a6 = Self.parse6(text) {
            withUnsafeMutableBytes(of: &storage) { raw in
                let sin6 = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in6.self)
                sin6.pointee.sin6_family = sa_family_t(AF_INET6)
                sin6.pointee.sin6_port = port.bigEndian
                sin6.pointee.sin6_addr = a6
            }
            family = .ipv6
        } else {
            throw .invalidHost(host)
        }
        self.storage = storage
        self.host = Self.numericHost(storage) ?? text
    }

    var domain: Int32 { family == .ipv4 ? AF_INET : AF_INET6 }
    var length: socklen_t {
        socklen_t(family == .ipv4 ? MemoryLayout<sockaddr_in>.size : MemoryLayout<sockaddr_in6>.size)
    }

    func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        withUnsafeBytes(of: storage) { raw in body(raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), length) }
    }

    private static func parse4(_ s: String) -> in_addr? {
        var a = in_addr()
        return inet_pton(AF_INET, s, &a) == 1 ? a : nil
    }

    private static func parse6(_ s: String) -> in6_addr? {
        var a = in6_addr()
        return inet_pton(AF_INET6, s, &a) == 1 ? a : nil
    }

    /// The numeric host of a socket address (no port), or nil for a family other than IP.
    static func numericHost(_ address: UnsafePointer<sockaddr>) -> String? {
        let len: socklen_t
        switch Int32(address.pointee.sa_family) {
        case AF_INET: len = socklen_t(MemoryLayout<sockaddr_in>.size)
        case AF_INET6: len = socklen_t(MemoryLayout<sockaddr_in6>.size)
        default: return nil
        }
        var buf = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        let rc = getnameinfo(address, len, &buf, socklen_t(buf.count), nil, 0, NI_NUMERICHOST)
        guard rc == 0 else { return nil }
        return buf.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    static func numericHost(_ storage: sockaddr_storage) -> String? {
        withUnsafeBytes(of: storage) { numericHost($0.baseAddress!.assumingMemoryBound(to: sockaddr.self)) }
    }
}
