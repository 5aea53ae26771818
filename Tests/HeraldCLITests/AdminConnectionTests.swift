import Foundation
import HeraldCore
import HeraldHTTPServer
import Testing

@testable import HeraldCLI

/// Reaching the server: where the token comes from, and what each failure says.
@Suite struct AdminConnectionTests {
    func tempDir() throws -> String {
        let d = NSTemporaryDirectory() + "herald-cli-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
        return d
    }

    @Test func anUnreachableServerExits1WithAHint() throws {
        // A port that was just free: bind it, then close it.
        let probe = try HTTPServer(config: HTTPServerConfig(port: 0), logger: .discard, handler: HTTPHandlerFunction { _ in .empty(200) })
        let port = probe.port
        probe.stop()
        let r = CLIResult.run(
            ["channels", "list", "--server", "http://127.0.0.1:\(port)"], env: ["HERALD_ADMIN_TOKEN": StubServer.token])
        #expect(r.code == 1)
        #expect(r.err.contains("cannot reach the Herald server at http://127.0.0.1:\(port) ("))
        #expect(r.err.contains("Is `herald serve` running? Use --server or HERALD_SERVER."))
    }

    @Test func aServerThatDoesNotAnswerInTimeIsNamed() throws {
        let stub = try StubServer { _, _ in
            Thread.sleep(forTimeInterval: 1.5)  // longer than --timeout below
            return .json(200, ["channels": []])
        }
        let r = stub.run(["channels", "list", "--timeout", "0.3"])
        #expect(r.code == 1)
        #expect(r.err.contains("no answer from the Herald server at \(stub.url) within 0.3 s (--timeout)"))
    }

    @Test func aRefusedTokenExits1NamingWhereTheTokenCameFrom() throws {
        let stub = try StubServer { _, _ in .json(200, ["channels": []]) }
        let r = stub.run(["channels", "list"], env: ["HERALD_ADMIN_TOKEN": "hk_wrong"])
        #expect(r.code == 1)
        #expect(r.err.contains("the server refused the token from HERALD_ADMIN_TOKEN (HTTP 401 unauthorized"))
        let flag = stub.run(["channels", "list", "--token", "hk_wrong"])
        #expect(flag.err.contains("refused the token from --token"))
    }

    @Test func aForbiddenKeyIsExplained() throws {
        let stub = try StubServer { _, _ in .error(403, code: "forbidden", message: "a publisher key cannot list channels") }
        let r = stub.run(["channels", "list"])
        #expect(r.code == 1)
        #expect(r.err.contains("is not allowed to do this (HTTP 403 forbidden: a publisher key cannot list channels)"))
    }

    @Test func overloadMentionsRetryAfter() throws {
        let stub = try StubServer { _, _ in
            .error(503, code: "overloaded", message: "the server is busy", headers: [("retry-after", "2")])
        }
        let r = stub.run(["channels", "list"])
        #expect(r.code == 1)
        #expect(r.err.contains("the server is busy (HTTP 503 overloaded; retry after 2 s)"))
    }

    @Test func theTokenIsReadFromTheFileServeWritesBesideTheDatabase() throws {
        let dir = try tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try (StubServer.token + "\n").write(toFile: dir + "/herald.db.admin-token", atomically: true, encoding: .utf8)
        let stub = try StubServer { _, _ in .json(200, ["channels": []]) }
        let viaEnv = CLIResult.run(["channels", "list"], env: ["HERALD_SERVER": stub.url, "HERALD_DB": dir + "/herald.db"])
        #expect(viaEnv.code == 0, "\(viaEnv.err)")
        let viaFlag = CLIResult.run(["channels", "list", "--server", stub.url, "--db", dir + "/herald.db"], env: [:])
        #expect(viaFlag.code == 0)
        try (StubServer.token).write(toFile: dir + "/other", atomically: true, encoding: .utf8)
        let viaFile = CLIResult.run(["channels", "list", "--server", stub.url, "--token-file", dir + "/other"], env: [:])
        #expect(viaFile.code == 0)
        #expect(stub.requests.allSatisfy { $0.header("authorization") == "Bearer \(StubServer.token)" })
        #expect(stub.requests.count == 3)
    }

    @Test func noTokenAnywhereNamesTheVariableAndTheFileLookedAt() throws {
        let dir = try tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let stub = try StubServer { _, _ in .json(200, ["channels": []]) }
        let r = CLIResult.run(["channels", "list"], env: ["HERALD_SERVER": stub.url, "HERALD_DB": dir + "/h.db"])
        #expect(r.code == 1)
        #expect(r.err.contains("HERALD_ADMIN_TOKEN"))
        #expect(r.err.contains("looked for \(dir)/h.db.admin-token: not found"))
        #expect(stub.requests.isEmpty)
    }

    @Test func aServerWithoutSchemeIsTakenAsHTTP() throws {
        let stub = try StubServer { _, _ in .json(200, ["channels": []]) }
        let r = stub.run(["channels", "list", "--server", stub.url.replacingOccurrences(of: "http://", with: "") + "/"])
        #expect(r.code == 0)
        #expect(stub.requests.first?.path == "/v1/channels")
    }
}
