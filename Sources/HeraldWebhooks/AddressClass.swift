import Glibc

/// What kind of network an IP address is on, for the webhook SSRF guard: a webhook URL
/// an admin typed must not become a way to reach the cloud's metadata service, a
/// database on the private network or the host's own services.
public enum AddressClass: Sendable, Equatable {
    /// 127.0.0.0/8, ::1.
    case loopback
    /// RFC 1918 (10/8, 172.16/12, 192.168/16), carrier-grade NAT 100.64/10, link-local
    /// 169.254/16 (cloud metadata lives there) and fe80::/10, unique-local fc00::/7.
    case privateNetwork
    /// Routable unicast.
    case global
    /// Never a destination: unspecified (0.0.0.0/8, ::), multicast, broadcast, reserved
    /// (240/4), documentation ranges are not special-cased (they route nowhere).
    case unusable

    /// The class of a 4-byte IPv4 or 16-byte IPv6 address (an IPv4-mapped IPv6 address is
    /// classed as its IPv4 address, and so is a NAT64 one, 64:ff9b::/96). Other lengths are
    /// `unusable`.
    public init(bytes b: [UInt8]) {
        if b.count == 16 {
            let mapped = b[0..<10].allSatisfy({ $0 == 0 }) && b[10] == 0xff && b[11] == 0xff
            let nat64 = b[0..<12].elementsEqual([0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0])  // 64:ff9b::/96
            if mapped || nat64 {
                self.init(bytes: Array(b[12..<16]))
            } else {
                self = Self.classify6(b)
            }
        } else if b.count == 4 {
            self = Self.classify4(b)
        } else {
            self = .unusable
        }
    }

    private static func classify4(_ b: [UInt8]) -> AddressClass {
        switch (b[0], b[1]) {
        case (127, _): return .loopback
        case (0, _): return .unusable
        case (10, _), (192, 168), (169, 254): return .privateNetwork
        case (172, 16...31): return .privateNetwork
        case (100, 64...127): return .privateNetwork
        case (224..., _): return .unusable  // multicast, reserved, broadcast
        default: return .global
        }
    }

    private static func classify6(_ b: [UInt8]) -> AddressClass {
        if b[0..<15].allSatisfy({ $0 == 0 }) {
            return b[15] == 1 ? .loopback : .unusable  // ::1, ::
        }
        if b[0] == 0xff { return .unusable }  // multicast
        if b[0] & 0xfe == 0xfc { return .privateNetwork }  // fc00::/7
        if b[0] == 0xfe && b[1] & 0xc0 == 0x80 { return .privateNetwork }  // fe80::/10
        return .global
    }

    /// The class of a socket address (AF_INET or AF_INET6); nil for another family.
    static func of(_ address: UnsafePointer<sockaddr>) -> (AddressClass, String)? {
        switch Int32(address.pointee.sa_family) {
        case AF_INET:
            return address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { p in
                var a = p.pointee.sin_addr
                let bytes = withUnsafeBytes(of: &a) { Array($0) }
                return (AddressClass(bytes: bytes), text(AF_INET, bytes))
            }
        case AF_INET6:
            return address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { p in
                var a = p.pointee.sin6_addr
                let bytes = withUnsafeBytes(of: &a) { Array($0) }
                return (AddressClass(bytes: bytes), text(AF_INET6, bytes))
            }
        default:
            return nil
        }
    }

    /// The printed form of an address's bytes (4 for AF_INET, 16 for AF_INET6).
    private static func text(_ family: Int32, _ bytes: [UInt8]) -> String {
        var buf = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let ok = bytes.withUnsafeBytes { inet_ntop(family, $0.baseAddress, &buf, socklen_t(buf.count)) != nil }
        return ok ? buf.withUnsafeBufferPointer { String(cString: $0.baseAddress!) } : "?"
    }
}

/// Which destinations a webhook may reach. Checked twice: on the URL when the webhook is
/// created (a literal address), and on every address the name resolves to, just before
/// connecting (a name that resolves to a private address, or changes to one later: DNS
/// rebinding).
public struct WebhookAddressPolicy: Sendable, Equatable {
    /// Loopback receivers (a sidecar, tests). Default true: the design allows loopback
    /// `http://` for tests.
    public var allowLoopback: Bool
    /// Private networks (RFC 1918, link-local, unique-local, CGNAT). Default false: only
    /// with an explicit option (`HERALD_WEBHOOK_ALLOW_PRIVATE`).
    public var allowPrivate: Bool

    public init(allowLoopback: Bool = true, allowPrivate: Bool = false) {
        self.allowLoopback = allowLoopback
        self.allowPrivate = allowPrivate
    }

    /// Whether an address of class `c` may be connected to.
    public func permits(_ c: AddressClass) -> Bool {
        switch c {
        case .global: true
        case .loopback: allowLoopback
        case .privateNetwork: allowPrivate
        case .unusable: false
        }
    }
}
