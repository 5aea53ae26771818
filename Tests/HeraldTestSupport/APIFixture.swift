import Foundation
import HeraldAPNS
import HeraldCore
import HeraldFanout
import HeraldHTTPServer
import HeraldSender
import HeraldStore

/// What the API handler is built from: the parts of a `FanoutFixture` and the admin token.
///
/// `APIFixture` takes a closure from these to an `HTTPHandler` instead of building
/// `APIServer` itself because this support target does not depend on `HeraldAPI` (the
/// package gives it the engines only); the API tests pass `APIServer.init`.
public struct APIParts: Sendable {
    public let store: Store
    /// What the engine runs on and the API should use: `store` unless the fixture was
    /// given another storage.
    public let storage: any HeraldStorage
    public let engine: FanoutEngine
    /// APNs channel management for every environment: the fixture's one simulator.
    public let channelManagers: @Sendable (APNSEnvironment) -> APNSChannelManager?
    public let metrics: MetricsRegistry
    /// The bootstrap admin token the handler must accept.
    public let adminToken: String
}

/// A real Herald API on a real `HTTPServer` (libmicrohttpd) bound to 127.0.0.1:0, over a
/// `FanoutFixture`: events published through it are really sent to the fixture's APNs
/// simulator, and broadcast channels are really created there. Comes with an
/// `APIClient` pointed at it and an admin token.
///
/// Every member may be used from any thread. `deinit` stops the HTTP server first, then
/// the fan-out fixture (engine, pools, store, simulator) goes.
public final class APIFixture: Sendable {
    /// Store, simulator, pools and engine underneath the API.
    public let fanout: FanoutFixture
    /// The listening server (`server.port` is the kernel's choice).
    public let server: HTTPServer
    /// The handler answering on `server` (an `APIServer` in the API tests).
    public let handler: any HTTPHandler
    /// The bootstrap admin token the server accepts.
    public let adminToken: String
    /// A client for `server`, sending no key unless told.
    public let client: APIClient

    /// The HTTP settings the fixture listens with unless told otherwise: loopback, port 0,
    /// 4 threads, bodies up to 16 MiB (as `herald serve`), a short shutdown grace.
    public static let defaultHTTP = HTTPServerConfig(
        host: "127.0.0.1", port: 0, threads: 4, maxBodyBytes: 16 << 20, shutdownGraceSeconds: 2)

    /// Starts a fan-out fixture (its engine configured by `fanout`), builds the handler with
    /// `makeHandler` and serves it.
    ///
    /// Throws whatever the fan-out fixture, `makeHandler` or `HTTPServer` throw (a
    /// `HTTPServerError` when loopback cannot be bound). Any thread.
    public init(
        http: HTTPServerConfig = APIFixture.defaultHTTP,
        adminToken: String = "hk_admin_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: ""),
        connections: Int = 2, storage: StorageFactory? = nil, fanout configureFanout: (inout FanoutConfig) -> Void = { _ in },
        makeHandler: (APIParts) throws -> any HTTPHandler
    ) throws {
        let fanout = try FanoutFixture(connections: connections, fanout: configureFanout, storage: storage)
        let manager = fanout.channels
        let parts = APIParts(
            store: fanout.store, storage: fanout.storage, engine: fanout.engine, channelManagers: { _ in manager }, metrics: fanout.metrics,
            adminToken: adminToken)
        let handler = try makeHandler(parts)
        server = try HTTPServer(config: http, logger: .discard, handler: handler)
        try server.start()
        self.fanout = fanout
        self.handler = handler
        self.adminToken = adminToken
        client = APIClient(host: "127.0.0.1", port: server.port)
    }

    deinit { server.stop() }

    /// `http://127.0.0.1:<port>`, for clients that take a URL (the CLI).
    public var baseURL: String { "http://127.0.0.1:\(server.port)" }

    /// Sends a request with the admin token. Throws `APIClientError` when no HTTP answer
    /// came. Any thread.
    @discardableResult
    public func admin(
        _ method: String, _ target: String, json: JSON? = nil, headers: [(String, String)] = []
    ) throws -> APIResponse {
        try client.send(method, target, token: adminToken, json: json, headers: headers)
    }

    /// The simulator underneath.
    public var sim: SimFixture { fanout.sim }
}

/// One HTTP answer as a test sees it.
public struct APIResponse: Sendable {
    /// The status code of the status line.
    public var status: Int
    /// Header fields by lower-cased name; repeated fields joined with ", ".
    public var headers: [String: String]
    /// The body as received (empty for HEAD and 204).
    public var body: [UInt8]

    /// The body parsed as JSON; nil when empty or not JSON.
    public var json: JSON? { body.isEmpty ? nil : try? JSON.parse(body) }
    /// `error.code` of Herald's error shape, when the body has it.
    public var errorCode: String? { json?["error"]?["code"]?.stringValue }
    /// `error.message` of Herald's error shape, when the body has it.
    public var errorMessage: String? { json?["error"]?["message"]?.stringValue }
    /// The body as UTF-8 text.
    public var text: String { String(decoding: body, as: UTF8.self) }

    /// The value of header `name` (any case).
    public func header(_ name: String) -> String? { headers[name.lowercased()] }
}

/// Why a request got no (parsable) HTTP answer.
public enum APIClientError: Error, Sendable, CustomStringConvertible {
    /// A socket call failed: which one, and `errno`.
    case socket(String, Int32)
    /// The answer did not arrive within the client's timeout.
    case timedOut
    /// The bytes received are not an HTTP/1.1 response.
    case malformed(String)

    public var description: String {
        switch self {
        case .socket(let call, let e): "\(call) failed: \(String(cString: strerror(e)))"
        case .timedOut: "no complete answer before the timeout"
        case .malformed(let why): "malformed HTTP response: \(why)"
        }
    }
}

/// A deliberately plain HTTP/1.1 client over a blocking TCP socket: one connection per
/// request (`Connection: close`), the exact bytes the test asks for (no header is added
/// that the test did not ask for, apart from `Host`, `Content-Length` and `Connection`),
/// and the answer read until the server closes. Good for malformed and unusual requests,
/// which higher-level clients refuse to send. Any thread; requests are independent.
public struct APIClient: Sendable {
    public let host: String
    public let port: UInt16
    /// Seconds a request may take, connect to last byte.
    public var timeout: Double

    public init(host: String = "127.0.0.1", port: UInt16, timeout: Double = 30) {
        self.host = host
        self.port = port
        self.timeout = timeout
    }

    /// Sends `method target` (a path with an optional `?query`, sent as given: percent-encode
    /// it yourself). `token` becomes `Authorization: Bearer <token>`. `json` is the body with
    /// `Content-Type: application/json`; `body` sends raw bytes with `contentType` (nil: no
    /// Content-Type at all). `headers` are added last, as given.
    ///
    /// Throws `APIClientError` when no HTTP answer came.
    @discardableResult
    public func send(
        _ method: String, _ target: String, token: String? = nil, json: JSON? = nil, body: [UInt8]? = nil,
        contentType: String? = nil, headers: [(String, String)] = []
    ) throws -> APIResponse {
        var fields: [(String, String)] = [("Host", "\(host):\(port)")]
        if let token { fields.append(("Authorization", "Bearer \(token)")) }
        var payload: [UInt8] = []
        if let json {
            payload = json.encoded()
            fields.append(("Content-Type", contentType ?? "application/json"))
        } else if let body {
            payload = body
            if let contentType { fields.append(("Content-Type", contentType)) }
        }
        if !payload.isEmpty || ["POST", "PUT", "PATCH"].contains(method) {
            fields.append(("Content-Length", String(payload.count)))
        }
        fields.append(("Connection", "close"))
        fields += headers
        var head = "\(method) \(target) HTTP/1.1\r\n"
        for (k, v) in fields { head += "\(k): \(v)\r\n" }
        head += "\r\n"
        return try exchange(Array(head.utf8) + payload, isHead: method == "HEAD")
    }

    /// Sends `bytes` exactly as given and reads the answer until the server closes.
    /// Throws `APIClientError`.
    public func exchange(_ bytes: [UInt8], isHead: Bool = false) throws -> APIResponse {
        let fd = try connect()
        defer { close(fd) }
        var off = 0
        while off < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + off, $0.count - off, Int32(MSG_NOSIGNAL)) }
            if n < 0 {
                if errno == EINTR { continue }
                // The server may answer and close before reading everything (a refused
                // upload): read what it said.
                if errno == EPIPE || errno == ECONNRESET { break }
                throw APIClientError.socket("send", errno)
            }
            off += n
        }
        var received: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, 0) }
            if n == 0 { break }
            if n < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN || errno == EWOULDBLOCK { throw APIClientError.timedOut }
                if errno == ECONNRESET && !received.isEmpty { break }
                throw APIClientError.socket("recv", errno)
            }
            received.append(contentsOf: buf[0..<n])
        }
        return try Self.parse(received, isHead: isHead)
    }

    private func connect() throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw APIClientError.socket("socket", errno) }
        var tv = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - timeout.rounded(.down)) * 1e6))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        guard inet_pton(AF_INET, host, &addr.sin_addr) == 1 else {
            close(fd)
            throw APIClientError.socket("inet_pton(\(host))", EINVAL)
        }
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else {
            let e = errno
            close(fd)
            throw APIClientError.socket("connect", e)
        }
        return fd
    }

    /// Status line, header fields and body (bounded by `Content-Length` when present).
    static func parse(_ bytes: [UInt8], isHead: Bool) throws -> APIResponse {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let end = bytes.firstRange(of: separator) else {
            throw APIClientError.malformed(bytes.isEmpty ? "the server closed without answering" : "no end of header")
        }
        let head = String(decoding: bytes[..<end.lowerBound], as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ", maxSplits: 2)
        guard statusLine.count >= 2, statusLine[0].hasPrefix("HTTP/1."), let status = Int(statusLine[1]) else {
            throw APIClientError.malformed("status line '\(head.prefix(80))'")
        }
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { throw APIClientError.malformed("header line '\(line)'") }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            headers[name] = headers[name].map { $0 + ", " + value } ?? value
        }
        var body = Array(bytes[end.upperBound...])
        if isHead {
            body = []
        } else if let cl = headers["content-length"].flatMap({ Int($0) }) {
            guard body.count >= cl else { throw APIClientError.malformed("body shorter than its Content-Length") }
            body = Array(body.prefix(cl))
        }
        return APIResponse(status: status, headers: headers, body: body)
    }
}
