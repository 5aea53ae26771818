import HeraldCore
import HeraldHTTPServer
import Testing

@testable import HeraldCLI

@Suite struct KeysCommandTests {
    @Test func createSendsRoleChannelsLabelAndShowsTheSecretOnceWithAWarning() throws {
        var created = APIShapes.key().objectValue!
        created["secret"] = "hk_pub_0123456789"
        created["label"] = "score feed"
        let answer = JSON.object(created)
        let stub = try StubServer { r, _ in
            r.method == "POST" && r.path == "/v1/keys" ? .json(201, answer) : .error(404, code: "not_found", message: "stub")
        }
        let r = stub.run(["keys", "create", "--role", "publisher", "--channels", "match-*", "flight-AF1", "--label", "score feed"])
        #expect(r.code == 0)
        #expect(stub.requests.first?.json == ["role": "publisher", "channels": ["match-*", "flight-AF1"], "label": "score feed"])
        #expect(r.out.contains("secret:       hk_pub_0123456789"))
        #expect(r.out.contains("created publisher key key_abc123"))
        #expect(r.err.contains("will not show it again"))

        let json = stub.run(["keys", "create", "--role", "publisher", "--channels", "match-*", "--json"])
        #expect(json.json == answer)
        #expect(json.err.contains("will not show it again"))
    }

    @Test func listShowsATableWithoutSecrets() throws {
        let stub = try StubServer { r, _ in
            r.method == "GET" && r.path == "/v1/keys"
                ? .json(200, ["keys": [APIShapes.key(), APIShapes.key("key_zzz", role: "admin", revoked: true)]])
                : .error(404, code: "not_found", message: "stub")
        }
        let r = stub.run(["keys", "list"])
        #expect(r.code == 0)
        let lines = r.out.split(separator: "\n").map(String.init)
        #expect(lines.count == 3)
        #expect(lines[0].hasPrefix("ID          ROLE       CHANNELS  LABEL  CREATED"))
        #expect(lines[1].hasPrefix("key_abc123  publisher  match-*   -      2026-01-01T00:00:00Z  -"))
        #expect(lines[2].hasSuffix("2026-01-01T01:00:00Z"))
    }

    @Test func revokeDeletesTheKey() throws {
        let stub = try StubServer { r, _ in
            r.method == "DELETE" && r.path == "/v1/keys/key_abc123"
                ? .json(200, APIShapes.key(revoked: true)) : .error(404, code: "not_found", message: "no key")
        }
        let r = stub.run(["keys", "revoke", "key_abc123"])
        #expect(r.code == 0)
        #expect(r.out.contains("revoked key key_abc123"))
        #expect(r.out.contains("revoked_at:   2026-01-01T01:00:00Z"))
        let missing = stub.run(["keys", "revoke", "key_nope"])
        #expect(missing.code == 1)
        #expect(missing.err.contains("no key (HTTP 404 not_found)"))
    }

    @Test func createNeedsARoleAndChannels() throws {
        let stub = try StubServer { _, _ in .empty(500) }
        #expect(stub.run(["keys", "create", "--channels", "a"]).code == 2)
        #expect(stub.run(["keys", "create", "--role", "publisher"]).code == 2)
        #expect(stub.run(["keys", "create", "--role", "owner", "--channels", "a"]).code == 2)
        #expect(stub.requests.isEmpty)
    }
}
