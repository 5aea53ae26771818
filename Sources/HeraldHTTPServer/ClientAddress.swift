import Glibc

/// A client's IP address as a key for the per-address connection cap: the 16 bytes of its
/// IPv6 form, an IPv4 address mapped into `::ffff:0:0/96` (so 127.0.0.1 and
/// ::ffff:127.0.0.1 are one client). Every address of another family is one key.
struct ClientAddress: Hashable {
    var high: UInt64
    var low: UInt64

    /// An IPv4 address, `a.b.c.d` as `(a, b, c, d)`.
    init(ipv4 a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8) {
        high = 0
        low = 0xffff_0000_0000 | UInt64(a) << 24 | UInt64(b) << 16 | UInt64(c) << 8 | UInt64(d)
    }

    init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// The address of a socket address libmicrohttpd hands over (nil: the "other" key).
    init(_ address: UnsafePointer<sockaddr>?) {
        guard let address else {
            self.init(high: .max, low: .max)
            return
        }
        switch Int32(address.pointee.sa_family) {
        case AF_INET:
            let bytes = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                withUnsafeBytes(of: $0.pointee.sin_addr) { Array($0) }
            }
            self.init(ipv4: bytes[0], bytes[1], bytes[2], bytes[3])
        case AF_INET6:
            let bytes = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                withUnsafeBytes(of: $0.pointee.sin6_addr) { Array($0) }
            }
            var h: UInt64 = 0
            var l: UInt64 = 0
            for i in 0..<8 { h = h << 8 | UInt64(bytes[i]) }
            for i in 8..<16 { l = l << 8 | UInt64(bytes[i]) }
            self.init(high: h, low: l)
        default:
            self.init(high: .max, low: .max)
        }
    }
}
