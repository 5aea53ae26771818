import Foundation
import HeraldCore
import HeraldCrypto
import HeraldSimulator
import HeraldTestSupport
import Testing

/// Two Apple teams in one `herald serve` (HERALD_APNS_TEAMS_FILE) against a simulator that
/// accepts both teams' keys and binds each connection to the team of its first JWT, as
/// APNs does: every bundle goes out on its own team's connections only.
@Suite(.serialized) struct TwoTeamsServeTests {
    static let singleKeyEnv = ["HERALD_APNS_KEY_FILE", "HERALD_APNS_KEY_ID", "HERALD_APNS_TEAM_ID"]

    /// A simulator whose own team owns com.a.app and a second team (own key) com.b.app; the
    /// teams file that says the same.
    func twoTeams() throws -> (sim: SimFixture, teamsFile: String, teamB: String, keyB: P256PrivateKey) {
        let keyB = try P256PrivateKey.generate()
        let teamB = "TEAMBBBB22"
        let sim = try SimFixture { c in
            c.otherTeams = [SimulatorTeam(teamID: teamB, keyID: "KEYBBBB222", publicKey: keyB.publicKey, bundleIDs: ["com.b.app"])]
        }
        try keyB.pkcs8PEM().write(toFile: sim.dir + "/AuthKey_KEYBBBB222.p8", atomically: true, encoding: .utf8)
        let file = sim.dir + "/teams.json"
        let teams: JSON = [
            [
                "team_id": .string(sim.files.teamID), "key_id": .string(sim.files.keyID), "key_file": .string(sim.files.apnsKeyFile),
                "bundle_ids": ["com.a.app"],
            ],
            ["team_id": .string(teamB), "key_id": "KEYBBBB222", "key_file": "AuthKey_KEYBBBB222.p8", "bundle_ids": ["com.b.app"]],
        ]
        try teams.text.write(toFile: file, atomically: true, encoding: .utf8)
        return (sim, file, teamB, keyB)
    }

    @Test func eachBundleGoesOutOnItsOwnTeamsConnectionsOnly() throws {
        let (sim, teamsFile, teamB, keyB) = try twoTeams()
        let teamA = sim.files.teamID
        let serve = try ServeProcess(
            db: sim.dir + "/herald.db", sim: sim, extraEnv: ["HERALD_APNS_TEAMS_FILE": teamsFile], removingEnv: Self.singleKeyEnv)
        defer { serve.stop() }
        let api = APIClient(port: UInt16(try #require(serve.api?.port)))
        let admin = serve.adminToken
        func call(_ m: String, _ p: String, _ body: JSON? = nil) throws -> APIResponse {
            try api.send(m, p, token: admin, json: body)
        }

        // A bundle no team covers is refused, naming the file.
        let refused = try call("POST", "/v1/channels", ["id": "match-c", "bundle_id": "com.c.app", "environment": "sandbox"])
        #expect(refused.status == 422)
        #expect(refused.errorCode == "bundle_not_covered")
        #expect(refused.errorMessage?.contains(teamsFile) == true)

        // Fan-out channels of both teams, and a broadcast one of team B (channel management
        // on team B's connection).
        for (id, bundle) in [("match-a", "com.a.app"), ("match-b", "com.b.app")] {
            let r = try call("POST", "/v1/channels", ["id": .string(id), "bundle_id": .string(bundle), "environment": "sandbox"])
            #expect(r.status == 201, "\(r.text)")
        }
        let b = try call(
            "POST", "/v1/channels", ["id": "cast-b", "bundle_id": "com.b.app", "environment": "sandbox", "mode": "broadcast"])
        #expect(b.status == 201, "\(b.text)")
        let castID = try #require(b.json?["apns_channel_id"]?.stringValue)
        #expect(sim.sim.channels(bundleID: "com.b.app") == [castID])

        let tokensA = makeTokens(40, seed: 31)
        let tokensB = makeTokens(40, seed: 32)
        for (channel, tokens) in [("match-a", tokensA), ("match-b", tokensB)] {
            let batch: JSON = ["subscribe": .array(tokens.map { ["token": .string($0), "kind": "activity"] })]
            let r = try call("POST", "/v1/channels/\(channel)/subscriptions:batch", batch)
            #expect(r.status == 200, "\(r.text)")
        }
        var events: [(String, String)] = []
        for channel in ["match-a", "match-b", "cast-b"] {
            let r = try call("POST", "/v1/channels/\(channel)/events", ["aps": ["event": "update", "content-state": ["score": 1]]])
            #expect(r.status == 202, "\(r.text)")
            events.append((channel, try #require(r.json?["event_id"]?.stringValue)))
        }
        for (channel, id) in events {
            var state = ""
            let done = Poll.until(timeout: 30) {
                state = (try? call("GET", "/v1/channels/\(channel)/events/\(id)"))?.json?["state"]?.stringValue ?? ""
                return state == "done" || state == "failed"
            }
            #expect(done && state == "done", "\(channel): \(state)")
        }
        for t in tokensA + tokensB { #expect(sim.sim.pushes(to: t).count == 1) }
        #expect(sim.sim.broadcasts(on: castID).count == 1)

        // Each connection was bound to the team of its first JWT, and carried only that
        // team's bundles.
        let traffic = sim.sim.teamTraffic()
        #expect(traffic.mismatches == 0)
        #expect((traffic.connections[teamA] ?? 0) >= 1)
        #expect((traffic.connections[teamB] ?? 0) >= 1)
        #expect(Set(traffic.requests[teamA]?.keys.map { $0 } ?? []) == ["com.a.app"])
        #expect(Set(traffic.requests[teamB]?.keys.map { $0 } ?? []) == ["com.b.app"])
        #expect(traffic.requests[teamA]?["com.a.app"] == 40)
        #expect((traffic.requests[teamB]?["com.b.app"] ?? 0) >= 42)  // 40 tokens, 1 broadcast, 1 channel create

        // Metrics carry the team label; the keys are never logged.
        let metrics = try api.send("GET", "/metrics").text
        #expect(metrics.contains("team=\"\(teamA)\""))
        #expect(metrics.contains("team=\"\(teamB)\""))
        let log = serve.output
        #expect(!log.contains("PRIVATE KEY"))
        #expect(!log.contains(try keyB.pkcs8PEM().split(separator: "\n")[1]))
        #expect(log.contains("\"herald.apns_teams\""))
    }

    @Test func theSimulatorRefusesABundleOnAnotherTeamsConnection() throws {
        // Herald never does this (above); the simulator must catch it if it did.
        let (sim, _, _, _) = try twoTeams()
        let (pool, _) = try sim.pool()
        defer { pool.shutdown() }
        let collector = ResultCollector()
        let tpl = tokenTemplate(collector, body: updatePayload(1), bundle: "com.b.app")
        pool.submit(requests(makeTokens(1, seed: 5), tpl))
        #expect(collector.wait(for: 1, timeout: 30))
        let r = collector.outcomes()[0]
        if case .outcome(let o, let resp)? = r {
            #expect(resp?.status == 403, "\(o)")
        } else {
            Issue.record("no answer: \(String(describing: r))")
        }
        #expect(sim.sim.teamTraffic().mismatches == 1)
    }

    @Test func aTeamsFileWithTheSingleKeyIsAUsageErrorAndBadFilesNameTheEntry() throws {
        let (sim, teamsFile, _, _) = try twoTeams()
        var env = [
            "HERALD_APNS_TEAMS_FILE": teamsFile, "HERALD_APNS_KEY_FILE": sim.files.apnsKeyFile, "HERALD_APNS_KEY_ID": sim.files.keyID,
            "HERALD_APNS_TEAM_ID": sim.files.teamID, "HERALD_DB": sim.dir + "/check.db",
        ]
        var r = try herald(["serve", "--check-config"], env: env)
        #expect(r.status == 2, "\(r.err)")
        #expect(r.err.contains("not both"))

        let bad = sim.dir + "/bad-teams.json"
        try
            #"[{"team_id":"TA","key_id":"KA","key_file":"a.p8","bundle_ids":["com.x"]},{"team_id":"TB","key_id":"KB","key_file":"b.p8","bundle_ids":["com.x"]}]"#
            .write(toFile: bad, atomically: true, encoding: .utf8)
        env["HERALD_APNS_TEAMS_FILE"] = bad
        r = try herald(["serve", "--check-config"], env: env.filter { !Self.singleKeyEnv.contains($0.key) })
        #expect(r.status == 1)
        #expect(r.err.contains("teams file \(bad), entry 1 (team_id TB)"), "\(r.err)")

        env["HERALD_APNS_TEAMS_FILE"] = teamsFile
        r = try herald(["serve", "--check-config"], env: env.filter { !Self.singleKeyEnv.contains($0.key) })
        #expect(r.status == 0, "\(r.err)")
    }
}
