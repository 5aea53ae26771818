import CSystem
import Foundation
import Glibc
import HeraldCore

/// A host and port as written in flags and environment variables: `127.0.0.1:8080`,
/// `[::1]:2197`, `localhost:443`, `api.push.apple.com:443` (a bare host gets `defaultPort`).
public struct HostPort: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Parses `host:port`, `[v6]:port` or `host` (then `defaultPort` must be given).
    public init?(parsing text: String, defaultPort: Int? = nil) {
        var s = Substring(text.trimmingCharacters(in: .whitespaces))
        if s.hasPrefix("https://") { s = s.dropFirst(8) }
        if s.hasPrefix("http://") { s = s.dropFirst(7) }
        if s.hasSuffix("/") { s = s.dropLast() }
        var host: Substring
        var portText: Substring?
        if s.hasPrefix("[") {
            guard let close = s.firstIndex(of: "]") else { return nil }
            host = s[s.index(after: s.startIndex)..<close]
            let rest = s[s.index(after: close)...]
            if rest.hasPrefix(":") { portText = rest.dropFirst() } else if !rest.isEmpty { return nil }
        } else if s.filter({ $0 == ":" }).count == 1, let colon = s.firstIndex(of: ":") {
            host = s[..<colon]
            portText = s[s.index(after: colon)...]
        } else {
            host = s
        }
        guard !host.isEmpty else { return nil }
        let port: Int
        if let portText {
            guard let p = Int(portText), (0...65535).contains(p) else { return nil }
            port = p
        } else {
            guard let d = defaultPort else { return nil }
            port = d
        }
        self.host = String(host)
        self.port = port
    }

    /// `host:port`, with brackets around IPv6 literals.
    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

/// Socket helpers. Every call goes through `Sys` so EINTR is retried and failures throw
/// `NetError.system` with the call's name (style: one way to touch the system).
public enum Socket {
    /// Resolves `host` (a fresh lookup every time, as Apple asks for each new connection).
    /// Blocking: call off the event loop.
    public static func resolve(_ host: String, port: Int) throws -> [SocketAddress] {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_family = AF_UNSPEC
        hints.ai_flags = AI_ADDRCONFIG
        if host == "localhost" { hints.ai_flags = 0 }
        var res: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &res)
        guard rc == 0, let first = res else {
            throw NetError.resolve(host: host, message: String(cString: gai_strerror(rc)))
        }
        defer { freeaddrinfo(first) }
        var out: [SocketAddress] = []
        var p: UnsafeMutablePointer<addrinfo>? = first
        while let ai = p {
            if let a = SocketAddress(ai.pointee.ai_addr, ai.pointee.ai_addrlen), !out.contains(a) { out.append(a) }
            p = ai.pointee.ai_next
        }
        return out
    }

    public static func setNonBlocking(_ fd: Int32) throws(NetError) {
        let flags = try Sys.call("fcntl(F_GETFL)") { fcntl(fd, F_GETFL) }
        try Sys.call("fcntl(F_SETFL)") { fcntl(fd, F_SETFL, flags | O_NONBLOCK) }
    }

    /// Best effort: a socket without TCP_NODELAY still works, only slower to answer.
    public static func setNoDelay(_ fd: Int32) {
        var one: Int32 = 1
        _ = try? Sys.call("setsockopt(TCP_NODELAY)") {
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        }
    }

    /// Starts a non-blocking connect. Returns the socket; completion is signalled by
    /// writability (then check `pendingError`).
    public static func startConnect(_ addr: SocketAddress) throws -> Int32 {
        let fd = try Sys.call("socket") { socket(addr.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }
        do {
            try setNonBlocking(fd)
            setNoDelay(fd)
            // In progress (the usual case) is nil: writability reports the end.
            _ = try Sys.nonBlocking("connect", also: EINPROGRESS) { Int(addr.withSockAddr { sa, len in connect(fd, sa, len) }) }
            return fd
        } catch {
            Sys.close(fd)
            throw error
        }
    }

    /// The socket's pending error (SO_ERROR), 0 if connected.
    public static func pendingError(_ fd: Int32) -> Int32 {
        var err: Int32 = 0
        var len = socklen_t(MemoryLayout<Int32>.size)
        do {
            try Sys.call("getsockopt(SO_ERROR)") { getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) }
        } catch {
            if case .system(_, let e) = error { return e }
        }
        return err
    }

    /// A listening, non-blocking socket bound to `host:port` (port 0 picks one).
    public static func listen(host: String, port: Int, backlog: Int32 = 1024) throws -> (fd: Int32, address: SocketAddress) {
        let addrs = try resolve(host, port: port)
        guard let addr = addrs.first else { throw NetError.resolve(host: host, message: "no address") }
        let fd = try Sys.call("socket") { socket(addr.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }
        do {
            var one: Int32 = 1
            try Sys.call("setsockopt(SO_REUSEADDR)") { setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size)) }
            if addr.family == AF_INET6 {
                try Sys.call("setsockopt(IPV6_V6ONLY)") {
                    setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &one, socklen_t(MemoryLayout<Int32>.size))
                }
            }
            do {
                try Sys.call("bind") { addr.withSockAddr { bind(fd, $0, $1) } }
            } catch {
                // Name the address: "bind failed: Address in use" alone does not say which.
                guard case .system(_, let e) = error else { throw error }
                throw NetError.system("bind(\(HostPort(host: host, port: port)))", e)
            }
            try Sys.call("listen") { Glibc.listen(fd, backlog) }
            try setNonBlocking(fd)
            return (fd, try localAddress(fd))
        } catch {
            Sys.close(fd)
            throw error
        }
    }

    public static func localAddress(_ fd: Int32) throws -> SocketAddress {
        var storage = sockaddr_storage()
        var len = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = try withUnsafeMutablePointer(to: &storage) { p in
            try p.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                try Sys.call("getsockname") { getsockname(fd, sa, &len) }
            }
        }
        return withUnsafePointer(to: &storage) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { SocketAddress($0, len)! }
        }
    }

    /// Accepts one connection (non-blocking). Nil when none is pending.
    public static func accept(_ listener: Int32) throws -> (Int32, SocketAddress?)? {
        var storage = sockaddr_storage()
        var len = socklen_t(MemoryLayout<sockaddr_storage>.size)
        // A connection the peer aborted before we took it is no error of ours: none pending.
        let accepted = try Sys.nonBlocking("accept", also: ECONNABORTED) {
            Int(
                withUnsafeMutablePointer(to: &storage) { p in
                    p.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                        Glibc.accept(listener, sa, &len)
                    }
                })
        }
        guard let accepted else { return nil }
        let fd = Int32(accepted)
        do {
            let flags = try Sys.call("fcntl(F_GETFD)") { fcntl(fd, F_GETFD) }
            try Sys.call("fcntl(F_SETFD)") { fcntl(fd, F_SETFD, flags | FD_CLOEXEC) }
            try setNonBlocking(fd)
        } catch {
            Sys.close(fd)
            throw error
        }
        setNoDelay(fd)
        let addr = withUnsafePointer(to: &storage) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { SocketAddress($0, len) }
        }
        return (fd, addr)
    }
}

/// An IPv4 or IPv6 socket address.
public struct SocketAddress: Sendable, Hashable, CustomStringConvertible {
    let bytes: [UInt8]  // the raw sockaddr
    public let family: Int32

    init?(_ sa: UnsafePointer<sockaddr>?, _ len: socklen_t) {
        guard let sa else { return nil }
        family = Int32(sa.pointee.sa_family)
        guard family == AF_INET || family == AF_INET6 else { return nil }
        bytes = Array(UnsafeRawBufferPointer(start: sa, count: Int(len)))
    }

    func withSockAddr<T>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T {
        bytes.withUnsafeBytes { raw in
            body(raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(bytes.count))
        }
    }

    /// The numeric host (`127.0.0.1`, `::1`).
    public var host: String {
        var buf = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        _ = withSockAddr { sa, len in getnameinfo(sa, len, &buf, socklen_t(buf.count), nil, 0, NI_NUMERICHOST) }
        return buf.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    public var port: Int {
        bytes.withUnsafeBytes { raw -> Int in
            if family == AF_INET {
                return Int(UInt16(bigEndian: raw.load(fromByteOffset: 2, as: UInt16.self)))
            } else {
                return Int(UInt16(bigEndian: raw.load(fromByteOffset: 2, as: UInt16.self)))
            }
        }
    }

    public var description: String { HostPort(host: host, port: port).description }
}
