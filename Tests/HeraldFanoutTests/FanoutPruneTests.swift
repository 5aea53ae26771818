import Foundation
import HeraldAPNS
import HeraldCore
import HeraldFanout
import HeraldSimulator
import HeraldStore
import HeraldTestSupport
import Testing

@Suite struct FanoutPruneTests {
    @Test func unregisteredTokensArePrunedUnlessReRegisteredAfterAPNsTimestamp() throws {
        let clock = ManualClock()
        let fx = try FanoutFixture(connections: 1, clock: clock)
        try fx.channel("m")
        let tokens = makeTokens(300, seed: 11)
        let registeredAt = clock.nowMillis()
        try fx.subscribe("m", tokens)
        // Ten minutes later APNs says 20 of them became inactive five minutes ago...
        clock.advance(by: 600)
        let dead = Array(tokens[0..<20])
        fx.sim.sim.markDead(dead, sinceMillis: registeredAt + 300_000)
        // ...but one of them was registered again since (a reinstall): it must survive.
        let revived = dead[0]
        _ = try fx.store.register(channelID: "m", token: Hex.decode(revived)!, kind: .activity, replaces: nil, expiresAt: nil)
        let e = try fx.waitFinished(try fx.publish("m"))
        #expect(e.state == .done)
        #expect(e.counters.sent == 280)
        #expect(e.counters.pruned == 19)
        #expect(e.counters.failed == 1)
        let ch = try #require(try fx.store.channel(id: "m"))
        for t in dead.dropFirst() {
            #expect(try fx.store.subscription(channelNum: ch.num, token: Hex.decode(t)!) == nil, "dead token kept")
        }
        #expect(try fx.store.subscription(channelNum: ch.num, token: Hex.decode(revived)!) != nil, "re-registered token pruned")
        #expect(try fx.store.countSubscriptions(channelNum: ch.num, kind: .activity) == 281)
    }

    @Test func aReRegistrationAfterThe410TimestampWins() throws {
        let fx = try FanoutFixture(connections: 1)
        try fx.channel("m")
        let tokens = makeTokens(10, seed: 12)
        try fx.subscribe("m", tokens)
        // APNs' timestamp lies in the past of the registration: a 410 stamped before the
        // app registered its token again must not delete the fresh registration.
        fx.sim.sim.markDead([tokens[0]], sinceMillis: SystemClock().nowMillis() - 3_600_000)
        let e = try fx.waitFinished(try fx.publish("m"))
        #expect(e.counters.pruned == 0)
        #expect(e.counters.failed == 1)
        let ch = try #require(try fx.store.channel(id: "m"))
        #expect(
            try fx.store.subscription(channelNum: ch.num, token: Hex.decode(tokens[0])!) != nil, "kept: registered after APNs' timestamp")
        #expect(try fx.store.countSubscriptions(channelNum: ch.num, kind: .activity) == 10)
    }

    @Test func aWrongEnvironmentTripsThePruningGuardAndKeepsEverySubscription() throws {
        let fx = try FanoutFixture(connections: 1, simulator: { $0.faults.badTokenRate = 1 })
        try fx.channel("m")
        try fx.subscribe("m", makeTokens(400, seed: 13))
        let e = try fx.waitFinished(try fx.publish("m"))
        #expect(e.state == .done)
        #expect(e.counters.pruned == 0)
        #expect(e.counters.failed == 400)
        let ch = try #require(try fx.store.channel(id: "m"))
        #expect(try fx.store.countSubscriptions(channelNum: ch.num, kind: .activity) == 400)
        #expect(fx.metrics.render().contains("herald_prune_guard_trips_total 1"))
    }

    @Test func aFewBadTokensArePruned() throws {
        let tokens = makeTokens(1000, seed: 14)
        let fx = try FanoutFixture(connections: 1, simulator: { $0.faults.badTokenRate = 0.05 })
        try fx.channel("m")
        try fx.subscribe("m", tokens)
        let bad = tokens.filter { SimulatorFaults.hashFraction($0, salt: 2) < 0.05 }
        #expect(bad.count > 10)
        let e = try fx.waitFinished(try fx.publish("m"))
        #expect(e.counters.pruned == Int64(bad.count))
        let ch = try #require(try fx.store.channel(id: "m"))
        #expect(try fx.store.countSubscriptions(channelNum: ch.num, kind: .activity) == Int64(1000 - bad.count))
    }

    @Test func expiredActivitySubscriptionsAreNotSentAndAreSwept() throws {
        let clock = ManualClock()
        let fx = try FanoutFixture(connections: 1, clock: clock, fanout: { $0.sweepInterval = 1e9 })
        try fx.channel("m")
        let old = makeTokens(5, seed: 15)
        try fx.subscribe("m", old)
        // 12 h and a minute later, the old activities have ended; new ones registered.
        clock.advance(by: 12 * 3600 + 60)
        let fresh = makeTokens(7, seed: 16)
        try fx.subscribe("m", fresh)
        let e = try fx.waitFinished(try fx.publish("m"))
        #expect(e.counters.sent == 7)
        for t in old { #expect(fx.sim.sim.pushes(to: t).isEmpty) }
        // Swept by the engine's periodic sweep or by this call, whichever comes first.
        #expect(try fx.store.sweepExpiredSubscriptions() <= 5)
        let ch = try #require(try fx.store.channel(id: "m"))
        #expect(try fx.store.subscriptionTotals().activity == 7)
        #expect(try fx.store.countSubscriptions(channelNum: ch.num, kind: .activity) == 7)
    }
}
