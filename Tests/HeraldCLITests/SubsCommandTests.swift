import Foundation
import HeraldCore
import HeraldHTTPServer
import Testing

@testable import HeraldCLI

@Suite struct SubsCommandTests {
    let t1 = String(repeating: "a1", count: 32)
    let t2 = String(repeating: "b2", count: 32)

    @Test func addingOneTokenPutsItWithKindAndExpiry() throws {
        let path = "/v1/channels/match-1/subscriptions/\(t1)"
        let stub = try StubServer { r, n in
            guard r.method == "PUT", r.path == path else { return .error(404, code: "not_found", message: "stub") }
            let sub: JSON = [
                "channel": "match-1", "token": .string(String(r.path.split(separator: "/").last!)), "kind": "push-to-start",
                "registered_at": 1_767_225_600, "expires_at": 1_767_268_800,
            ]
            return .json(n == 0 ? 201 : 200, sub)
        }
        let r = stub.run(["subs", "add", "match-1", t1, "--kind", "push-to-start", "--expires-at", "1767268800"])
        #expect(r.code == 0)
        #expect(stub.requests.first?.json == ["kind": "push-to-start", "expires_at": 1_767_268_800])
        #expect(r.out == "subscribed \(t1) to match-1 (new)\n")
        let again = stub.run(["subs", "add", "match-1", t1])
        #expect(stub.requests.last?.json == [:])
        #expect(again.out.contains("already subscribed"))
        let json = stub.run(["subs", "add", "match-1", t1, "--json"])
        #expect(json.json?["kind"] == "push-to-start")
    }

    @Test func addingSeveralTokensUsesTheBatchRoute() throws {
        let stub = try StubServer { r, _ in
            r.method == "POST" && r.path == "/v1/channels/match-1/subscriptions:batch"
                ? .json(200, ["subscribed": 1, "updated": 1, "unsubscribed": 0]) : .error(404, code: "not_found", message: "stub")
        }
        let r = stub.run(["subs", "add", "match-1", t1, t2, "--kind", "activity"])
        #expect(r.code == 0)
        #expect(
            stub.requests.first?.json
                == ["subscribe": [["token": .string(t1), "kind": "activity"], ["token": .string(t2), "kind": "activity"]]])
        #expect(r.out == "subscribed 2 tokens to match-1: 1 new, 1 already subscribed\n")
    }

    @Test func importWithNoCatchUpSaysSoInEveryBatch() throws {
        let stub = try StubServer { r, _ in
            r.method == "POST" && r.path == "/v1/channels/match-1/subscriptions:batch"
                ? .json(200, ["subscribed": 1, "updated": 0, "unsubscribed": 0]) : .error(404, code: "not_found", message: "stub")
        }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("herald-import-\(UInt64.random(in: 0...UInt64.max)).txt")
            .path
        try "\(t1)\n\(t2)\n".write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        #expect(stub.run(["subs", "import", "match-1", file, "--batch-size", "1", "--no-catch-up"]).code == 0)
        #expect(
            stub.requests.map(\.json)
                == [
                    ["subscribe": [["token": .string(t1)]], "catch_up": false], ["subscribe": [["token": .string(t2)]], "catch_up": false],
                ])
        #expect(stub.run(["subs", "import", "match-1", file]).code == 0)
        #expect(
            stub.requests.last?.json == ["subscribe": [["token": .string(t1)], ["token": .string(t2)]]],
            "catch-up is the server's default: not sent")
    }

    @Test func removingOneTokenDeletesItAndSeveralUseTheBatch() throws {
        let stub = try StubServer { r, _ in
            switch (r.method, r.path) {
            case ("DELETE", "/v1/channels/match-1/subscriptions/\(t1)"): .empty(204)
            case ("POST", "/v1/channels/match-1/subscriptions:batch"): .json(200, ["subscribed": 0, "updated": 0, "unsubscribed": 1])
            default: .error(404, code: "not_found", message: "not subscribed")
            }
        }
        let one = stub.run(["subs", "remove", "match-1", t1])
        #expect(one.code == 0)
        #expect(one.out == "unsubscribed \(t1) from match-1\n")
        let two = stub.run(["subs", "remove", "match-1", t1, t2])
        #expect(stub.requests.last?.json == ["unsubscribe": [.string(t1), .string(t2)]])
        #expect(two.out.contains("unsubscribed 1 of 2 tokens"))
        let missing = stub.run(["subs", "remove", "match-1", t2])
        #expect(missing.code == 1)
        #expect(missing.err.contains("not subscribed (HTTP 404 not_found)"))
    }

    @Test func aRefusedTokenShowsTheServersMessage() throws {
        let stub = try StubServer { _, _ in .error(422, code: "invalid_token", message: "the token is not hex") }
        let r = stub.run(["subs", "add", "match-1", "zz"])
        #expect(r.code == 1)
        #expect(r.err.contains("the token is not hex (HTTP 422 invalid_token)"))
    }

    @Test func usageMistakesExit2() throws {
        let stub = try StubServer { _, _ in .empty(500) }
        #expect(stub.run(["subs", "add", "match-1"]).code == 2)
        #expect(stub.run(["subs", "add", "match-1", t1, "--kind", "forever"]).code == 2)
        #expect(stub.run(["subs", "add", "match-1", t1, "--expires-at", "soon"]).code == 2)
        #expect(stub.run(["subs", "remove", "match-1"]).code == 2)
        #expect(stub.run(["subs", "import", "match-1"]).code == 2)
        #expect(stub.run(["subs", "import", "match-1", "f", "--batch-size", "0"]).code == 2)
        #expect(stub.requests.isEmpty)
    }
}
