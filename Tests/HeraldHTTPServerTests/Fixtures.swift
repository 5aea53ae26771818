import Foundation
import Glibc
import HeraldCore
import HeraldHTTPServer

/// Answers `/echo` with the request body as is; anything else with a JSON description of
/// the request as the server parsed it.
struct EchoHandler: HTTPHandler {
    func handle(_ r: HTTPRequest) -> HTTPResponse {
        if r.path == "/echo" {
            return HTTPResponse(
                status: 200, headers: [("Content-Type", "application/octet-stream"), ("X-Method", r.method)],
                body: r.body)
        }
        return .json(
            200,
            [
                "method": .string(r.method), "path": .string(r.path), "rawPath": .string(r.rawPath),
                "rawQuery": .string(r.rawQuery), "query": .object(r.query.mapValues { .string($0) }),
                "headers": .object(r.headers.mapValues { .string($0) }), "remote": .string(r.remoteAddress),
                "bodyLength": .int(Int64(r.body.count)),
            ])
    }
}

/// Log lines kept in memory, for asserting what was logged.
final class LogCapture: Sendable {
    private let lines: LineStore
    let logger: Logger

    final class LineStore: Sendable {
        let lines = Locked<[String]>([])
    }

    init(level: LogLevel = .debug) {
        let store = LineStore()
        lines = store
        logger = Logger(
            subsystem: "http", sink: LogSink(level: level) { line in store.lines.withLock { $0.append(line) } })
    }

    /// Parsed lines whose event is `event`.
    func events(_ event: String) -> [JSON] {
        lines.lines.withLock { $0 }.compactMap { try? JSON.parse($0) }.filter { $0["event"]?.stringValue == event }
    }

    var all: [JSON] { lines.lines.withLock { $0 }.compactMap { try? JSON.parse($0) } }
}

/// A started server on 127.0.0.1 (or `host`), port 0.
func startServer(
    _ config: HTTPServerConfig = HTTPServerConfig(), logger: Logger = .discard,
    handler: some HTTPHandler = EchoHandler()
) throws -> HTTPServer {
    let server = try HTTPServer(config: config, logger: logger, handler: handler)
    try server.start()
    return server
}

/// A fresh connection to `server`.
func connect(_ server: HTTPServer) throws -> RawConnection {
    try RawConnection(host: server.boundAddress, port: server.port)
}

/// One request on a fresh connection.
func roundTrip(_ server: HTTPServer, _ request: String, head: Bool = false) throws -> RawResponse {
    let c = try connect(server)
    try c.send(request)
    return try c.readResponse(head: head)
}

func get(_ path: String, extraHeaders: String = "") -> String {
    "GET \(path) HTTP/1.1\r\nHost: test\r\n\(extraHeaders)\r\n"
}

func post(_ path: String, body: [UInt8], extraHeaders: String = "") -> [UInt8] {
    Array("POST \(path) HTTP/1.1\r\nHost: test\r\nContent-Length: \(body.count)\r\n\(extraHeaders)\r\n".utf8) + body
}

/// `body` in chunked transfer coding, `chunk` bytes per chunk, with the terminating chunk.
func chunked(_ body: [UInt8], chunk: Int) -> [UInt8] {
    var out: [UInt8] = []
    var i = 0
    while i < body.count {
        let n = min(chunk, body.count - i)
        out += Array((String(n, radix: 16) + "\r\n").utf8) + body[i..<(i + n)] + [13, 10]
        i += n
    }
    return out + Array("0\r\n\r\n".utf8)
}

/// Waits (polling a condition, bounded) until `condition` holds; false on timeout.
func eventually(timeout: Double = 5, _ condition: () -> Bool) -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? Task.checkCancellation()
        usleepShort()
    }
    return condition()
}

private func usleepShort() {
    var ts = timespec(tv_sec: 0, tv_nsec: 5_000_000)
    nanosleep(&ts, nil)
}

/// Runs `body(i)` for i in 0..<count, each on its own new thread (not a pool, which may run
/// them one after another), and waits for all of them.
func onSeparateThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let group = DispatchGroup()
    for i in 0..<count {
        group.enter()
        Thread.detachNewThread {
            body(i)
            group.leave()
        }
    }
    group.wait()
}
