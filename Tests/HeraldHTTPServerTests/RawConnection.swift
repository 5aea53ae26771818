import Glibc

/// A test client made of raw sockets, so tests can send malformed, partial and slow input
/// and see exactly what comes back. Every read has a deadline.
final class RawConnection {
    enum Failure: Error, Equatable {
        case connect(errno: Int32)
        case send(errno: Int32)
        case timedOut
        /// The connection ended before any byte of a response.
        case closedBeforeResponse
        /// The connection ended part-way through a response.
        case truncated
        case malformed(String)
    }

    private(set) var fd: Int32
    private var buffer: [UInt8] = []

    init(host: String = "127.0.0.1", port: UInt16) throws {
        fd = try Self.connect(host: host, port: port)
    }

    deinit { close() }

    func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    /// Connects, returning the descriptor, or throws `.connect(errno)`.
    static func connect(host: String, port: UInt16) throws -> Int32 {
        var storage = sockaddr_storage()
        var len: socklen_t = 0
        let family: Int32
        var a4 = in_addr()
        var a6 = in6_addr()
        if inet_pton(AF_INET, host, &a4) == 1 {
            family = AF_INET
            len = socklen_t(MemoryLayout<sockaddr_in>.size)
            withUnsafeMutableBytes(of: &storage) { raw in
                let p = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in.self)
                p.pointee.sin_family = sa_family_t(AF_INET)
                p.pointee.sin_port = port.bigEndian
                p.pointee.sin_addr = a4
            }
        } else {
            precondition(inet_pton(AF_INET6, host, &a6) == 1, "test host must be an IP literal")
            family = AF_INET6
            len = socklen_t(MemoryLayout<sockaddr_in6>.size)
            withUnsafeMutableBytes(of: &storage) { raw in
                let p = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in6.self)
                p.pointee.sin6_family = sa_family_t(AF_INET6)
                p.pointee.sin6_port = port.bigEndian
                p.pointee.sin6_addr = a6
            }
        }
        let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        precondition(fd >= 0)
        let rc = withUnsafeBytes(of: storage) { raw in
            Glibc.connect(fd, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), len)
        }
        if rc != 0 {
            let e = errno
            Glibc.close(fd)
            throw Failure.connect(errno: e)
        }
        return fd
    }

    func send(_ text: String) throws { try send(Array(text.utf8)) }

    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 {
                if errno == EINTR { continue }
                throw Failure.send(errno: errno)
            }
            offset += n
        }
    }

    /// Reads whatever arrives before `deadline`: true if bytes came, false on EOF (or reset).
    /// Throws `.timedOut` when nothing came in time.
    private func fill(until deadline: ContinuousClock.Instant) throws -> Bool {
        let remaining = deadline - .now
        guard remaining > .zero else { throw Failure.timedOut }
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let ms = Int32(remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000)
        let rc = poll(&pfd, 1, max(ms, 1))
        if rc < 0 {
            if errno == EINTR { return try fill(until: deadline) }
            return false
        }
        if rc == 0 { throw Failure.timedOut }
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n <= 0 { return false }  // 0: orderly EOF; <0: reset, also the end of this connection
        buffer.append(contentsOf: chunk[0..<n])
        return true
    }

    /// Reads one response. `head` says the request was HEAD (no body follows the headers).
    func readResponse(timeout: Double = 5, head: Bool = false) throws -> RawResponse {
        let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
        var headEnd: Int?
        while true {
            headEnd = Self.find([13, 10, 13, 10], in: buffer)
            if headEnd != nil { break }
            if try !fill(until: deadline) { throw buffer.isEmpty ? Failure.closedBeforeResponse : .truncated }
        }
        let headText = String(decoding: buffer[0..<headEnd!], as: UTF8.self)
        var lines = headText.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else {
            throw Failure.malformed(headText)
        }
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { throw Failure.malformed(line) }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: " ")
            headers[name] = headers[name].map { $0 + ", " + value } ?? value
        }
        buffer.removeFirst(headEnd! + 4)
        var body: [UInt8] = []
        if !head {
            if let cl = headers["content-length"].flatMap({ Int($0) }) {
                while buffer.count < cl {
                    if try !fill(until: deadline) { throw Failure.truncated }
                }
                body = Array(buffer[0..<cl])
                buffer.removeFirst(cl)
            } else {
                while try fill(until: deadline) {}
                body = buffer
                buffer = []
            }
        }
        return RawResponse(status: status, headers: headers, body: body)
    }

    /// Reads until the server closes the connection or `timeout` passes. True on EOF (or
    /// reset); what arrived meanwhile is in `received`.
    func waitForClose(timeout: Double) -> (closed: Bool, received: [UInt8]) {
        let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
        do {
            while try fill(until: deadline) {}
            let got = buffer
            buffer = []
            return (true, got)
        } catch {
            return (false, buffer)
        }
    }

    /// True when nothing at all arrives (and the connection stays open) for `seconds`.
    func staysSilent(for seconds: Double) -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        do {
            _ = try fill(until: deadline)
            return false
        } catch {
            return buffer.isEmpty
        }
    }

    private static func find(_ needle: [UInt8], in hay: [UInt8]) -> Int? {
        guard hay.count >= needle.count else { return nil }
        for i in 0...(hay.count - needle.count) where hay[i] == needle[0] {
            if Array(hay[i..<(i + needle.count)]) == needle { return i }
        }
        return nil
    }
}

extension StringProtocol {
    fileprivate func trimmingCharacters(in set: Character) -> String {
        var s = Substring(self)
        while s.first == set { s.removeFirst() }
        while s.last == set { s.removeLast() }
        return String(s)
    }
}
