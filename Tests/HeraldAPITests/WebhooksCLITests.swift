import Foundation
import HeraldCLI
import HeraldCore
import HeraldTestSupport
import Testing

/// `herald webhooks create|list|delete` against the real server.
@Suite(.liveAPI) struct WebhooksCLITests {
    func herald(_ fx: APIFixture, _ args: [String]) -> (code: Int32, out: String, err: String) {
        let console = Console(capture: true, isTTY: false)
        let env = ["HERALD_SERVER": fx.baseURL, "HERALD_ADMIN_TOKEN": fx.adminToken, "HERALD_DB": "/nonexistent/herald.db"]
        let code = HeraldCLI.main(args, environment: env, console: console)
        return (code, console.capturedOutput, console.capturedError)
    }

    @Test func createListDeleteWithTablesAndJSON() throws {
        let fx = try Live.api()
        let url = "https://backend.example.com/\(unique("cli"))"
        let created = herald(fx, ["webhooks", "create", url, "--events", "event.finished", "channel.closed", "--channels", "match-*"])
        #expect(created.code == 0, "\(created.err)")
        #expect(created.out.hasPrefix("created webhook whk_"))
        #expect(created.out.contains("whsec_"))
        #expect(created.err.contains("Save the secret now"))
        let id = try #require(created.out.split(separator: "\n").first?.split(separator: " ").last.map(String.init))

        let listed = herald(fx, ["webhooks", "list"])
        #expect(listed.code == 0)
        #expect(listed.out.hasPrefix("ID"))
        let row = try #require(listed.out.split(separator: "\n").first { $0.hasPrefix(id + " ") })
        #expect(row.contains(url) && row.contains("event.finished,channel.closed") && row.contains("match-*"))
        #expect(!listed.out.contains("whsec_"))
        let json = herald(fx, ["webhooks", "list", "--json"])
        let mine = try JSON.parse(json.out)["webhooks"]?.arrayValue?.first { $0["id"]?.stringValue == id }
        #expect(mine?["url"]?.stringValue == url)

        let deleted = herald(fx, ["webhooks", "delete", id, "--json"])
        #expect(deleted.code == 0)
        #expect(try JSON.parse(deleted.out)["id"]?.stringValue == id)
        let again = herald(fx, ["webhooks", "delete", id])
        #expect(again.code == 1)
        #expect(again.err.contains("HTTP 404 not_found"))
    }

    @Test func badInputIsAUsageErrorOrTheServersRefusal() throws {
        let fx = try Live.api()
        #expect(herald(fx, ["webhooks", "create", "https://a.example/h"]).code == 2, "--events is required")
        #expect(herald(fx, ["webhooks", "nope"]).code == 2)
        let refused = herald(fx, ["webhooks", "create", "http://a.example/h", "--events", "event.finished"])
        #expect(refused.code == 1)
        #expect(refused.err.contains("HTTP 422 invalid_field"))
        for args in [
            ["webhooks", "--help"], ["webhooks", "create", "--help"], ["webhooks", "list", "--help"], ["webhooks", "delete", "--help"],
        ] {
            let h = herald(fx, args)
            #expect(h.code == 0, "\(args)")
            #expect(h.out.contains("Usage: herald webhooks"), "\(args)")
        }
    }
}
