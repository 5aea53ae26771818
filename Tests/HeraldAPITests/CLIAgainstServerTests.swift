import Foundation
import HeraldCLI
import HeraldCore
import HeraldTestSupport
import Testing

/// The CLI was written against the agreed JSON shapes and tested against a stub; here it
/// talks to the real server, so client and server are shown to agree.
@Suite(.liveAPI) struct CLIAgainstServerTests {
    struct Run {
        var code: Int32
        var out: String
        var err: String
        var json: JSON? { try? JSON.parse(out) }
    }

    func herald(_ fx: APIFixture, _ args: [String], token: String? = nil) -> Run {
        let console = Console(capture: true, isTTY: false)
        let env = ["HERALD_SERVER": fx.baseURL, "HERALD_ADMIN_TOKEN": token ?? fx.adminToken, "HERALD_DB": "/nonexistent/herald.db"]
        let code = HeraldCLI.main(args, environment: env, console: console)
        return Run(code: code, out: console.capturedOutput, err: console.capturedError)
    }

    @Test func channelsCreateListShowClose() throws {
        let fx = try Live.api()
        let id = unique("cli-match")
        let created = herald(
            fx,
            [
                "channels", "create", id, "--bundle-id", "com.example.app", "--mode", "hybrid", "--env", "sandbox", "--storage",
                "most-recent",
            ])
        #expect(created.code == 0, "\(created.err)")
        #expect(created.out.hasPrefix("created channel \(id)\n"))
        #expect(created.out.contains("mode:            hybrid"))
        let apnsID = try #require(try fx.admin("GET", "/v1/channels/\(id)").json?["apns_channel_id"]?.stringValue)
        #expect(created.out.contains(apnsID))
        #expect(fx.simulatorChannels[apnsID] == 1)

        let listed = herald(fx, ["channels", "list"])
        #expect(listed.code == 0)
        let row = try #require(listed.out.split(separator: "\n").first { $0.hasPrefix(id + " ") })
        #expect(row.contains("hybrid") && row.contains("sandbox") && row.contains("most-recent") && row.contains("open"))
        let listedJSON = herald(fx, ["channels", "list", "--json"])
        #expect(listedJSON.json?["channels"]?.arrayValue?.contains { $0["id"] == .string(id) } == true)

        let shown = herald(fx, ["channels", "show", id, "--json"])
        #expect(shown.code == 0)
        #expect(shown.json == (try fx.admin("GET", "/v1/channels/\(id)").json))

        let closed = herald(fx, ["channels", "close", id])
        #expect(closed.code == 0)
        #expect(closed.out.hasPrefix("closed channel \(id)\n"))
        #expect(closed.out.contains("state:           closed"))
        #expect(fx.simulatorChannels[apnsID] == nil)

        let again = herald(fx, ["channels", "create", id, "--bundle-id", "com.example.app"])
        #expect(again.code == 1)
        #expect(again.err.contains("HTTP 409 channel_exists"))
        let missing = herald(fx, ["channels", "show", unique("cli-none")])
        #expect(missing.code == 1)
        #expect(missing.err.contains("HTTP 404 not_found"))
    }

    @Test func keysCreateListRevokeAndARevokedKeyIsRefused() throws {
        let fx = try Live.api()
        let channel = unique("cli-keys")
        try fx.createChannel(channel)
        let created = herald(fx, ["keys", "create", "--role", "publisher", "--channels", channel, "--label", "feed", "--json"])
        #expect(created.code == 0, "\(created.err)")
        #expect(created.err.contains("Save the secret now"))
        let id = try #require(created.json?["id"]?.stringValue)
        let secret = try #require(created.json?["secret"]?.stringValue)
        #expect(created.json?["channels"] == [.string(channel)])

        let listed = herald(fx, ["keys", "list"])
        #expect(listed.code == 0)
        let row = try #require(listed.out.split(separator: "\n").first { $0.hasPrefix(id + " ") })
        #expect(row.contains("publisher") && row.contains(channel) && row.contains("feed"))
        #expect(!listed.out.contains(secret))

        let published = herald(fx, ["publish", channel, "--json", #"{"event":"update","content-state":{"s":1}}"#], token: secret)
        #expect(published.code == 0, "\(published.err)")

        let revoked = herald(fx, ["keys", "revoke", id])
        #expect(revoked.code == 0)
        #expect(revoked.out.hasPrefix("revoked key \(id)\n"))
        #expect(!revoked.out.contains("revoked_at:   -"))

        let refused = herald(fx, ["publish", channel, "--json", #"{"event":"update","content-state":{"s":2}}"#], token: secret)
        #expect(refused.code == 1)
        #expect(refused.err.contains("HTTP 401 unauthorized"))
        let forbidden = herald(fx, ["channels", "list"], token: try fx.createKey("subscriber", [channel]).secret)
        #expect(forbidden.code == 1)
        #expect(forbidden.err.contains("HTTP 403 forbidden"))
    }

    @Test func subsAddRemoveAndImport() throws {
        let fx = try Live.api()
        let channel = unique("cli-subs")
        try fx.createChannel(channel)
        let one = freshToken()
        let first = herald(fx, ["subs", "add", channel, one])
        #expect(first.code == 0, "\(first.err)")
        #expect(first.out == "subscribed \(one) to \(channel) (new)\n")
        #expect(herald(fx, ["subs", "add", channel, one]).out == "subscribed \(one) to \(channel) (already subscribed, updated)\n")

        let many = (0..<4).map { _ in freshToken() }
        let batch = herald(fx, ["subs", "add", channel] + many + [one])
        #expect(batch.code == 0, "\(batch.err)")
        #expect(batch.out == "subscribed 5 tokens to \(channel): 4 new, 1 already subscribed\n")
        let starter = herald(
            fx, ["subs", "add", "--kind", "push-to-start", "--expires-at", "\(nowSeconds() + 86400)", channel, freshToken(), "--json"])
        #expect(starter.json?["kind"] == "push-to-start")
        var counts = try fx.admin("GET", "/v1/channels/\(channel)").json?["subscribers"]
        #expect(counts == ["activity": 5, "push_to_start": 1, "total": 6])

        #expect(herald(fx, ["subs", "remove", channel, one]).out == "unsubscribed \(one) from \(channel)\n")
        let gone = herald(fx, ["subs", "remove", channel, one])
        #expect(gone.code == 1)
        #expect(gone.err.contains("HTTP 404 not_found"))
        let removed = herald(fx, ["subs", "remove", channel, many[0], many[1], freshToken()])
        #expect(removed.out == "unsubscribed 2 of 3 tokens from \(channel) (the others were not subscribed)\n")

        let file = NSTemporaryDirectory() + "herald-import-\(UUID().uuidString).txt"
        defer { try? FileManager.default.removeItem(atPath: file) }
        let imported = (0..<25).map { _ in freshToken() }
        try ("# tokens\n" + imported.joined(separator: "\n") + "\n").write(toFile: file, atomically: true, encoding: .utf8)
        let imp = herald(fx, ["subs", "import", channel, file, "--batch-size", "10", "--json"])
        #expect(imp.code == 0, "\(imp.err)")
        #expect(imp.json?["tokens"] == 25)
        #expect(imp.json?["subscribed"] == 25)
        counts = try fx.admin("GET", "/v1/channels/\(channel)").json?["subscribers"]
        #expect(counts?["activity"] == 27)

        // A bad token: the server names its index in the batch, the CLI turns it into the line.
        var lines = (0..<12).map { _ in freshToken() }
        lines[7] = "not-a-token"
        try (lines.joined(separator: "\n") + "\n").write(toFile: file, atomically: true, encoding: .utf8)
        let bad = herald(fx, ["subs", "import", channel, file, "--batch-size", "5"])
        #expect(bad.code == 1)
        #expect(bad.err.contains("line 8"), "\(bad.err)")
        #expect(bad.err.contains("HTTP 422 invalid_token"))
    }

    @Test func publishWaitFollowsTheEventToDone() throws {
        let fx = try Live.api()
        let channel = unique("cli-pub")
        try fx.createChannel(channel)
        let tokens = (0..<10).map { _ in freshToken() }
        #expect(herald(fx, ["subs", "add", channel] + tokens).code == 0)
        let publisher = try fx.createKey("publisher", [channel]).secret

        let r = herald(
            fx, ["publish", channel, "--json", #"{"event":"update","content-state":{"home":1}}"#, "--priority", "10", "--wait"],
            token: publisher)
        #expect(r.code == 0, "\(r.err)")
        let lines = r.out.split(separator: "\n").map(String.init)
        let accepted = try #require(lines.first)
        #expect(accepted.hasPrefix("published event evt_"))
        #expect(accepted.hasSuffix(" to \(channel) (seq 1, state queued)"))
        let summary = try #require(lines.first { $0.hasPrefix("event evt_") })
        #expect(summary.hasSuffix(" done"))
        #expect(r.out.contains("sent:     10 of 10"))
        for t in tokens {
            let got = fx.sim.sim.pushes(to: t)
            #expect(got.count == 1)
            #expect(got.first?.priority == 10)
        }

        let dry = herald(
            fx, ["publish", channel, "--json", #"{"event":"update","content-state":{"home":2}}"#, "--dry-run"], token: publisher)
        #expect(dry.code == 0, "\(dry.err)")
        #expect(dry.out.hasPrefix("dry run on \(channel): nothing was sent"))
        #expect(dry.out.contains("targets:       10 tokens"))
        #expect(dry.out.contains("of 4,096 bytes"))

        let key = "cli-\(UUID().uuidString)"
        let once = herald(
            fx, ["publish", channel, "--json", #"{"event":"update","content-state":{"home":3}}"#, "--idempotency-key", key],
            token: publisher)
        #expect(once.out.hasPrefix("published event"))
        let twice = herald(
            fx, ["publish", channel, "--json", #"{"event":"update","content-state":{"home":3}}"#, "--idempotency-key", key],
            token: publisher)
        #expect(twice.code == 0)
        #expect(twice.out.contains("already published with this idempotency key"))

        let big = herald(
            fx, ["publish", channel, "--json", #"{"event":"update","content-state":{"x":"\#(String(repeating: "y", count: 5000))"}}"#],
            token: publisher)
        #expect(big.code == 1)
        #expect(big.err.contains("HTTP 413 payload_too_large"))
        let stale = herald(fx, ["publish", channel, "--json", #"{"event":"update","timestamp":1,"content-state":{}}"#], token: publisher)
        #expect(stale.code == 1)
        #expect(stale.err.contains("HTTP 409 stale_timestamp"))
    }
}
