import HeraldCore
import HeraldHTTPServer
import Testing

@testable import HeraldCLI

@Suite struct ChannelsCommandTests {
    @Test func createPostsTheDocumentedBodyAndPrintsTheChannel() throws {
        let stub = try StubServer { r, _ in
            r.method == "POST" && r.path == "/v1/channels"
                ? .json(201, APIShapes.channel(mode: "hybrid")) : .error(404, code: "not_found", message: "stub")
        }
        let r = stub.run([
            "channels", "create", "match-1", "--bundle-id", "com.example.app", "--mode", "hybrid", "--env", "sandbox",
            "--storage", "most-recent",
        ])
        #expect(r.code == 0)
        let req = try #require(stub.requests.first)
        #expect(req.header("content-type") == "application/json")
        #expect(
            req.json == [
                "id": "match-1", "bundle_id": "com.example.app", "mode": "hybrid", "environment": "sandbox",
                "storage_policy": "most-recent",
            ])
        #expect(r.out.contains("created channel match-1"))
        #expect(r.out.contains("apns_channel_id: dGVzdC1jaGFubmVsLWlk"))
        #expect(r.out.contains("subscribers:     150 (activity 120, push-to-start 30)"))
    }

    @Test func createLeavesUnsetOptionsToTheServer() throws {
        let stub = try StubServer { _, _ in .json(201, APIShapes.channel()) }
        let r = stub.run(["channels", "create", "match-1", "--bundle-id", "com.example.app", "--json"])
        #expect(r.code == 0)
        #expect(stub.requests.first?.json == ["id": "match-1", "bundle_id": "com.example.app"])
        #expect(r.json == APIShapes.channel())
    }

    @Test func listPrintsAnAlignedTable() throws {
        let last = APIShapes.event("done", sent: 150, targets: 150)
        let stub = try StubServer { r, _ in
            r.method == "GET" && r.path == "/v1/channels"
                ? .json(200, ["channels": [APIShapes.channel("flight-AF1", mode: "broadcast"), APIShapes.channel(lastEvent: last)]])
                : .error(404, code: "not_found", message: "stub")
        }
        let r = stub.run(["channels", "list"])
        #expect(r.code == 0)
        let lines = r.out.split(separator: "\n").map(String.init)
        #expect(lines.count == 3)
        #expect(lines[0].hasPrefix("ID          MODE       ENV         STORAGE  STATE  SUBSCRIBERS  LAST EVENT"))
        #expect(lines[1].hasPrefix("flight-AF1  broadcast  production  none     open   150          -"))
        #expect(lines[2].contains("#7 update done"))
        #expect(lines[2].hasSuffix("2026-01-01T00:00:00Z"))
    }

    @Test func listJSONIsTheServersObjectPrettyPrintedWithSortedKeys() throws {
        let body: JSON = ["channels": [APIShapes.channel()]]
        let stub = try StubServer { _, _ in .json(200, body) }
        let r = stub.run(["channels", "list", "--json"])
        #expect(r.code == 0)
        #expect(r.json == body)
        #expect(r.out.contains("\n  \"channels\""))
        let keys = ["apns_channel_id", "bundle_id", "closed_at", "created_at", "environment", "id", "last_event", "mode"]
        let positions = keys.map { r.out.range(of: "\"\($0)\"")!.lowerBound }
        #expect(positions == positions.sorted())
    }

    @Test func showGetsAndCloseDeletesTheChannel() throws {
        let stub = try StubServer { r, _ in
            switch (r.method, r.path) {
            case ("GET", "/v1/channels/match-1"): .json(200, APIShapes.channel())
            case ("DELETE", "/v1/channels/match-1"): .json(200, APIShapes.channel(state: "closed"))
            default: .error(404, code: "not_found", message: "stub")
            }
        }
        let show = stub.run(["channels", "show", "match-1"])
        #expect(show.code == 0)
        #expect(show.out.contains("state:           open"))
        let close = stub.run(["channels", "close", "match-1"])
        #expect(close.code == 0)
        #expect(close.out.contains("closed channel match-1"))
        #expect(close.out.contains("closed_at:       2026-01-01T01:00:00Z"))
        #expect(stub.requests.map(\.method) == ["GET", "DELETE"])
    }

    @Test func aMissingChannelPrintsTheServersMessageAndCode() throws {
        let stub = try StubServer { _, _ in .error(404, code: "not_found", message: "no channel 'nope'") }
        let r = stub.run(["channels", "show", "nope"])
        #expect(r.code == 1)
        #expect(r.err.contains("no channel 'nope' (HTTP 404 not_found)"))
    }

    @Test func channelIDsArePercentEncodedInPaths() throws {
        let stub = try StubServer { _, _ in .json(200, APIShapes.channel()) }
        _ = stub.run(["channels", "show", "a b/c"])
        #expect(stub.requests.first?.rawPath == "/v1/channels/a%20b%2Fc")
    }

    @Test func usageMistakesExit2WithoutARequest() throws {
        let stub = try StubServer { _, _ in .json(201, APIShapes.channel()) }
        for args in [
            ["channels", "create", "match-1"],
            ["channels", "create", "match-1", "--bundle-id", "b", "--mode", "multicast"],
            ["channels", "create", "--bundle-id", "b"],
            ["channels", "show"],
            ["channels", "list", "extra"],
            ["channels", "rename", "x"],
            ["channels"],
            ["channels", "list", "--timeout", "0"],
            ["channels", "list", "--server", "ftp://x"],
        ] {
            let r = stub.run(args)
            #expect(r.code == 2, "\(args)")
            #expect(r.err.contains("Run 'herald channels --help'"), "\(args)")
        }
        #expect(stub.requests.isEmpty)
    }
}
