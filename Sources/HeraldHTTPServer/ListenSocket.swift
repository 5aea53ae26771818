import Glibc

/// A bound, listening TCP socket owned until handed to libmicrohttpd.
///
/// We bind it ourselves (rather than let libmicrohttpd do it) so that "address in use" and
/// "invalid address" are typed errors at `HTTPServer.init`, and the bound port is known
/// before `start()`.
final class ListenSocket {
    /// The descriptor, or -1 once handed over or closed.
    private(set) var fd: Int32
    let address: ListenAddress
    /// The port actually bound (the kernel's choice when 0 was asked for).
    let port: UInt16

    init(host: String, port: UInt16) throws(HTTPServerError) {
        let address = try ListenAddress(host: host, port: port)
        let fd = socket(address.domain, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .socket(operation: "socket", errno: errno) }
        do throws(HTTPServerError) {
            var one: Int32 = 1
            // A restarted server must be able to bind while old connections sit in TIME_WAIT.
            try Self.check(
                setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size)), "setsockopt")
            if address.family == .ipv6 {
                // "::" means IPv6 only; listen on 0.0.0.0 too with a second server if needed.
                try Self.check(
                    setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &one, socklen_t(MemoryLayout<Int32>.size)),
                    "setsockopt")
            }
            let rc = address.withSockaddr { bind(fd, $0, $1) }
            if rc != 0 {
                let e = errno
                if e == EADDRINUSE { throw .addressInUse(host: address.host, port: port) }
                throw .socket(operation: "bind \(address.host) port \(port)", errno: e)
            }
            try Self.check(listen(fd, SOMAXCONN), "listen")
            // libmicrohttpd's worker threads race for accept(): it must not block.
            try Self.check(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK), "fcntl")
            self.port = try Self.boundPort(fd)
        } catch {
            close(fd)
            throw error
        }
        self.fd = fd
        self.address = address
    }

    deinit { closeIfOwned() }

    /// Gives up ownership: from now on libmicrohttpd closes (or leaks) the descriptor.
    func handOver() -> Int32 {
        let f = fd
        fd = -1
        return f
    }

    func closeIfOwned() {
        if fd >= 0 { close(fd) }
        fd = -1
    }

    /// The choke point for the few socket calls made here.
    private static func check(_ rc: Int32, _ operation: String) throws(HTTPServerError) {
        if rc < 0 { throw .socket(operation: operation, errno: errno) }
    }

    private static func boundPort(_ fd: Int32) throws(HTTPServerError) -> UInt16 {
        var storage = sockaddr_storage()
        var len = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let rc = withUnsafeMutableBytes(of: &storage) { raw in
            getsockname(fd, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), &len)
        }
        try check(rc, "getsockname")
        return withUnsafeBytes(of: storage) { raw -> UInt16 in
            if Int32(raw.load(as: sockaddr.self).sa_family) == AF_INET {
                return UInt16(bigEndian: raw.load(as: sockaddr_in.self).sin_port)
            }
            return UInt16(bigEndian: raw.load(as: sockaddr_in6.self).sin6_port)
        }
    }
}
