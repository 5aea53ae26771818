import Foundation
import HeraldAPNS
import HeraldCore
import HeraldCrypto
import HeraldNet
import HeraldSimulator
import HeraldTestSupport
import Testing

@testable import HeraldSender

/// `APNSPools` with two teams against the simulator: one pool per (team, environment),
/// each signing with its own key; channel management follows the bundle's team.
@Suite struct TeamPoolsTests {
    func settings(_ fx: SimFixture) -> APNSSettings {
        var a = APNSSettings()
        a.tokenHost = HostPort(host: "127.0.0.1", port: fx.sim.address.port)
        a.managementHost = a.tokenHost
        a.caFile = fx.files.certificateFile
        a.connections = 1
        a.retry = RetryPolicy(maxAttempts: 3, backoff: Backoff(base: 0.01, cap: 0.1))
        return a
    }

    @Test func eachTeamHasItsOwnPoolsJWTAndTeamLabel() throws {
        let keyB = try P256PrivateKey.generate()
        let fx = try SimFixture { c in
            c.otherTeams = [SimulatorTeam(teamID: "TEAMB00002", keyID: "KEYB000002", publicKey: keyB.publicKey, bundleIDs: ["com.b"])]
        }
        let jwtA = JWTProvider(credentials: try fx.credentials(), logger: .discard)
        let jwtB = JWTProvider(credentials: APNSCredentials(keyID: "KEYB000002", teamID: "TEAMB00002", key: keyB), logger: .discard)
        let metrics = MetricsRegistry()
        let pools = APNSPools(
            settings: settings(fx), teams: [APNSTeam(jwt: jwtA, bundleIDs: ["com.a"]), APNSTeam(jwt: jwtB, bundleIDs: ["com.b"])],
            source: "teams.json", logger: .discard, metrics: metrics)
        defer { pools.shutdown() }
        let a = try #require(pools.pool(.token, .sandbox, bundleID: "com.a"))
        let b = try #require(pools.pool(.token, .sandbox, bundleID: "com.b"))
        #expect(a !== b)
        #expect(pools.pool(.token, .sandbox, bundleID: "com.a") === a)
        #expect(pools.pool(.token, .production, bundleID: "com.a") !== a)
        #expect(pools.pool(.token, .sandbox, bundleID: "com.c") == nil)
        #expect(a.jwt === jwtA && b.jwt === jwtB)

        let collector = ResultCollector()
        a.submit(requests(makeTokens(3, seed: 1), tokenTemplate(collector, body: updatePayload(1), bundle: "com.a")))
        b.submit(requests(makeTokens(3, seed: 2), tokenTemplate(collector, body: updatePayload(1), bundle: "com.b")))
        #expect(collector.wait(for: 3, timeout: 30))
        #expect(a.waitIdle(timeout: 30) && b.waitIdle(timeout: 30))
        let traffic = fx.sim.teamTraffic()
        #expect(traffic.mismatches == 0)
        #expect(traffic.requests[fx.files.teamID] == ["com.a": 3])
        #expect(traffic.requests["TEAMB00002"] == ["com.b": 3])

        // Channel management for com.b goes out as team B; the list holds 10,000 ids.
        let manager = try #require(pools.channelManager(.sandbox))
        let id = try manager.create(bundleID: "com.b", storagePolicy: 0)
        _ = try #require(fx.sim.plantChannels(bundleID: "com.b", count: 9_999))
        let listed = try manager.list(bundleID: "com.b")
        #expect(listed.count == 10_000 && listed.contains(id))
        #expect(throws: APNSChannelManager.Failure.self) { try manager.list(bundleID: "com.c") }
        #expect(fx.sim.teamTraffic().requests["TEAMB00002"]?["com.b"] == 5)
        #expect(fx.sim.teamTraffic().mismatches == 0)

        let text = metrics.render()
        #expect(text.contains(#"team="\#(fx.files.teamID)""#) && text.contains(#"team="TEAMB00002""#))
    }
}
