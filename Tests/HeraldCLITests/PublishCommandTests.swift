import Foundation
import HeraldCore
import HeraldHTTPServer
import Testing

@testable import HeraldCLI

@Suite struct PublishCommandTests {
    static func eventsRoute(_ r: HTTPRequest, _ n: Int) -> HTTPResponse {
        guard r.method == "POST", r.path == "/v1/channels/match-1/events" else {
            return .error(404, code: "not_found", message: "stub")
        }
        if r.query["dry_run"] == "true" {
            return .json(
                200,
                [
                    "dry_run": true, "event": "update", "payload": ["aps": r.json?["aps"] ?? .null], "payload_bytes": 312,
                    "limit_bytes": 4096, "targets": 1500, "broadcast": true, "priority": 5, "aps_timestamp": 1_767_225_600,
                ])
        }
        return .json(r.header("idempotency-key") == "again" ? 200 : 202, APIShapes.accepted)
    }

    @Test func anAPSDictionaryIsWrappedAndFlagsAddPriorityAndExpiration() throws {
        let stub = try StubServer(route: Self.eventsRoute)
        let r = stub.run([
            "publish", "match-1", "--json", #"{"event":"update","content-state":{"home":2}}"#, "--priority", "5",
            "--expiration", "1767229200", "--idempotency-key", "goal-2",
        ])
        #expect(r.code == 0, "\(r.err)")
        let req = try #require(stub.requests.first)
        #expect(req.json == ["aps": ["event": "update", "content-state": ["home": 2]], "priority": 5, "expiration": 1_767_229_200])
        #expect(req.header("idempotency-key") == "goal-2")
        #expect(req.header("content-type") == "application/json")
        #expect(r.out == "published event evt_1 to match-1 (seq 7, state queued)\n")
    }

    @Test func aFullBodyFromAFileIsSentAsIsAndTheFlagWins() throws {
        let path = NSTemporaryDirectory() + "herald-event-\(UUID().uuidString).json"
        try #"{"aps":{"event":"end","timestamp":5},"priority":10}"#.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let stub = try StubServer(route: Self.eventsRoute)
        #expect(stub.run(["publish", "match-1", "--file", path]).code == 0)
        #expect(stub.requests.last?.json == ["aps": ["event": "end", "timestamp": 5], "priority": 10])
        #expect(stub.run(["publish", "match-1", "--file", path, "--priority", "5"]).code == 0)
        #expect(stub.requests.last?.json?["priority"] == 5)
    }

    @Test func aRepeatedIdempotencyKeySaysSo() throws {
        let stub = try StubServer(route: Self.eventsRoute)
        let r = stub.run(["publish", "match-1", "--json", #"{"event":"update"}"#, "--idempotency-key", "again"])
        #expect(r.code == 0)
        #expect(r.out.contains("already published with this idempotency key"))
    }

    @Test func aDryRunReportsSizeAgainstTheLimitAndTargets() throws {
        let stub = try StubServer(route: Self.eventsRoute)
        let r = stub.run(["publish", "match-1", "--json", #"{"event":"update"}"#, "--dry-run"])
        #expect(r.code == 0)
        #expect(stub.requests.first?.rawQuery == "dry_run=true")
        #expect(r.out.contains("nothing was sent"))
        #expect(r.out.contains("payload:       312 of 4,096 bytes"))
        #expect(r.out.contains("targets:       1,500 tokens + one APNs broadcast"))
    }

    @Test func aTooLargePayloadShowsTheServersMessage() throws {
        let stub = try StubServer { _, _ in
            .error(413, code: "payload_too_large", message: "the payload is 5000 bytes; the limit is 4096")
        }
        let r = stub.run(["publish", "match-1", "--json", #"{"event":"update"}"#])
        #expect(r.code == 1)
        #expect(r.err.contains("the payload is 5000 bytes; the limit is 4096 (HTTP 413 payload_too_large)"))
    }

    @Test func usageMistakesExit2WithoutARequest() throws {
        let stub = try StubServer(route: Self.eventsRoute)
        for args in [
            ["publish", "match-1"],
            ["publish", "match-1", "--json", "{}", "--file", "x"],
            ["publish", "match-1", "--json", "{nope"],
            ["publish", "match-1", "--json", "[1]"],
            ["publish", "match-1", "--json", "{}", "--priority", "7"],
            ["publish", "match-1", "--json", "{}", "--dry-run", "--wait"],
            ["publish", "--json", "{}"],
        ] {
            #expect(stub.run(args).code == 2, "\(args)")
        }
        #expect(stub.requests.isEmpty)
    }
}
