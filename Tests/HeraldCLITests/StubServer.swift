import Foundation
import HeraldCore
import HeraldHTTPServer

@testable import HeraldCLI

/// A stand-in Herald API on 127.0.0.1:0 that answers with the documented shapes: it
/// refuses any key but `token` with 401 (like the server), records every request, and
/// hands the rest to `route`.
final class StubServer: @unchecked Sendable {
    // @unchecked: `seen` is guarded by `lock`; the rest is set in init.
    static let token = "hk_admin_secret"
    private let lock = NSLock()
    private var seen: [HTTPRequest] = []
    private var server: HTTPServer!

    init(route: @escaping @Sendable (HTTPRequest, Int) -> HTTPResponse) throws {
        let handler = HTTPHandlerFunction { [weak self] r in
            guard let self else { return .empty(500) }
            let n = self.record(r)
            guard r.header("authorization") == "Bearer \(Self.token)" else {
                return .error(401, code: "unauthorized", message: "missing or unknown API key")
            }
            return route(r, n)
        }
        server = try HTTPServer(config: HTTPServerConfig(port: 0, threads: 2), logger: .discard, handler: handler)
        try server.start()
    }

    deinit { server.stop() }

    /// Records `r`; returns how many requests came before it.
    private func record(_ r: HTTPRequest) -> Int {
        lock.withLock {
            seen.append(r)
            return seen.count - 1
        }
    }

    var url: String { "http://127.0.0.1:\(server.port)" }
    var requests: [HTTPRequest] { lock.withLock { seen } }

    /// Runs `herald` in-process against this server with the right key.
    func run(_ args: [String], env: [String: String] = [:], tty: Bool = false) -> CLIResult {
        CLIResult.run(args, env: ["HERALD_SERVER": url, "HERALD_ADMIN_TOKEN": Self.token].merging(env) { _, new in new }, tty: tty)
    }
}

/// Exit code and captured output of one in-process `herald` run.
struct CLIResult {
    var code: Int32
    var out: String
    var err: String

    static func run(_ args: [String], env: [String: String], tty: Bool = false) -> CLIResult {
        let console = Console(capture: true, isTTY: tty)
        let code = HeraldCLI.main(args, environment: env, console: console)
        return CLIResult(code: code, out: console.capturedOutput, err: console.capturedError)
    }

    /// stdout parsed as JSON.
    var json: JSON? { try? JSON.parse(out) }
}

extension HTTPRequest {
    /// The body parsed as JSON.
    var json: JSON? { try? JSON.parse(body) }
}
