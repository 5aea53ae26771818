import Foundation
import Glibc

/// One TCP connection to 127.0.0.1 that a test drives byte by byte: partial requests,
/// drips, uploads that never end, connections held open and idle. Every wait has a
/// deadline; nothing here sleeps to make a race pass. One thread at a time.
final class HostileClient {
    enum Failure: Error, Equatable {
        case connect(errno: Int32)
        case send(errno: Int32)
    }

    private(set) var fd: Int32

    /// Connects (blocking; the kernel completes the handshake even when the server has not
    /// accepted yet), from `source` (any 127.x.y.z: all of 127.0.0.0/8 is loopback on
    /// Linux, so one test can be many clients). `receiveBuffer` sets SO_RCVBUF first.
    /// Throws `.connect`.
    init(port: UInt16, from source: String = "127.0.0.1", receiveBuffer: Int32? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        precondition(fd >= 0, "socket: \(errno)")
        if var size = receiveBuffer {
            _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        if source != "127.0.0.1" {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            local.sin_addr.s_addr = inet_addr(source)
            let rc = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            if rc != 0 {
                let e = errno
                Glibc.close(fd)
                throw Failure.connect(errno: e)
            }
        }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        if rc != 0 {
            let e = errno
            Glibc.close(fd)
            throw Failure.connect(errno: e)
        }
    }

    deinit { close() }

    func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    /// Sends everything, or throws `.send` (EPIPE/ECONNRESET once the server has closed).
    func send(_ text: String) throws { try send(Array(text.utf8)) }

    func send(_ bytes: [UInt8]) throws {
        var off = 0
        while off < bytes.count {
            let n = bytes[off...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 {
                if errno == EINTR { continue }
                throw Failure.send(errno: errno)
            }
            off += n
        }
    }

    /// Sends what the socket takes without blocking; false once the server has closed.
    func sendWithoutBlocking(_ bytes: [UInt8]) -> (sent: Int, open: Bool) {
        let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
        if n >= 0 { return (n, true) }
        return (0, errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
    }

    /// True when the server has closed the connection (EOF or reset), without waiting.
    /// Bytes it sent before closing are appended to `received`.
    func isClosedByPeer(received: inout [UInt8]) -> Bool {
        var buf = [UInt8](repeating: 0, count: 16 << 10)
        while true {
            let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n > 0 {
                received += buf[0..<n]
                continue
            }
            if n == 0 { return true }
            if errno == EINTR { continue }
            return errno != EAGAIN && errno != EWOULDBLOCK
        }
    }

    /// Reads until the server closes or `timeout` passes; returns the bytes and whether it
    /// closed.
    func readUntilClose(timeout: Double) -> (bytes: [UInt8], closed: Bool) {
        let deadline = Date(timeIntervalSinceNow: timeout)
        var received: [UInt8] = []
        while true {
            if isClosedByPeer(received: &received) { return (received, true) }
            let left = deadline.timeIntervalSinceNow
            if left <= 0 { return (received, false) }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            _ = poll(&p, 1, Int32(min(left, 1) * 1000) + 1)
        }
    }

    /// Reads one response (status line, headers, a Content-Length body) within `timeout`;
    /// nil when none arrived.
    func readResponse(timeout: Double) -> RawResponse? {
        let deadline = Date(timeIntervalSinceNow: timeout)
        var received: [UInt8] = []
        while true {
            if let r = RawResponse(received) { return r }
            if isClosedByPeer(received: &received) { return RawResponse(received) }
            let left = deadline.timeIntervalSinceNow
            if left <= 0 { return nil }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            _ = poll(&p, 1, Int32(min(left, 1) * 1000) + 1)
        }
    }
}

/// An HTTP/1.1 response as received.
struct RawResponse {
    var status: Int
    var headers: [String: String]
    var body: [UInt8]

    /// Parses a complete response from `bytes`; nil while incomplete.
    init?(_ bytes: [UInt8]) {
        guard let end = bytes.firstRange(of: [13, 10, 13, 10]) else { return nil }
        let head = String(decoding: bytes[..<end.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
        let statusLine = head[0].split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else { return nil }
        var headers: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let rest = Array(bytes[end.upperBound...])
        let length = headers["content-length"].flatMap { Int($0) } ?? 0
        guard rest.count >= length else { return nil }
        self.status = status
        self.headers = headers
        self.body = Array(rest.prefix(length))
    }

    /// `error.code` of Herald's JSON error shape, when the body has it.
    var errorCode: String? {
        guard let o = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
            let e = o["error"] as? [String: Any]
        else { return nil }
        return e["code"] as? String
    }
}
