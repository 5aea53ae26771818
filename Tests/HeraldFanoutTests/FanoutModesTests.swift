import Foundation
import HeraldAPNS
import HeraldCore
import HeraldFanout
import HeraldSimulator
import HeraldStore
import HeraldTestSupport
import Testing

@Suite struct FanoutModesTests {
    @Test func broadcastSendsOneRequestToTheAPNsChannel() throws {
        let fx = try FanoutFixture(connections: 1)
        let ch = try fx.channel("flight", mode: .broadcast, storage: .mostRecent)
        let apnsID = try #require(ch.apnsChannelID)
        #expect(fx.sim.sim.channels()[apnsID] == 1)
        try fx.subscribe("flight", makeTokens(20, seed: 21))  // activity tokens are not used in broadcast mode
        let e = try fx.waitFinished(try fx.publish("flight", state: ["gate": "B12"]))
        #expect(e.state == .done)
        #expect(e.broadcastState == .sent)
        let got = fx.sim.sim.broadcasts(on: apnsID)
        #expect(got.map(\.payload) == [e.payload])
        #expect(fx.sim.sim.stats().accepted == 0)
    }

    @Test func aNoStorageChannelGetsExpirationZeroEvenWhenThePublisherAsksOtherwise() throws {
        let fx = try FanoutFixture(connections: 1)
        let ch = try fx.channel("score", mode: .broadcast, storage: .none)
        let event = try LiveActivityEvent.validate([
            "aps": ["event": "update", "content-state": ["s": 1]], "expiration": .int(SystemClock().nowSeconds() + 600),
        ])
        let r = try fx.store.publish(channelID: "score", event: event, idempotencyKey: nil, dryRun: false)
        fx.engine.notifyEvent(r.event.id)
        let done = try fx.waitFinished(r.event)
        // The simulator answers BadExpirationDate to non-zero expirations on policy 0.
        #expect(done.broadcastState == .sent, "\(done.broadcastReason ?? "")")
        #expect(fx.sim.sim.broadcasts(on: ch.apnsChannelID!).count == 1)
    }

    @Test func hybridSendsTheBroadcastAndEveryToken() throws {
        let fx = try FanoutFixture(connections: 1)
        let ch = try fx.channel("match", mode: .hybrid)
        let tokens = makeTokens(50, seed: 22)
        try fx.subscribe("match", tokens)
        let e = try fx.waitFinished(try fx.publish("match"))
        #expect(e.state == .done)
        #expect(e.counters.sent == 50)
        #expect(fx.sim.sim.broadcasts(on: ch.apnsChannelID!).count == 1)
        let reached = fx.sim.sim.tokens(thatReceived: e.payload) == Set(tokens)
        #expect(reached, "not every subscriber got the event")
    }

    @Test func startGoesToPushToStartTokensEvenOnABroadcastChannel() throws {
        let fx = try FanoutFixture(connections: 1)
        let ch = try fx.channel("match", mode: .broadcast)
        let starters = makeTokens(5, seed: 23)
        try fx.subscribe("match", starters, kind: .pushToStart)
        try fx.subscribe("match", makeTokens(5, seed: 24), kind: .activity)
        let e = try fx.waitFinished(try fx.publish("match", .start, state: ["score": 0]))
        #expect(e.counters.sent == 5)
        let reached = fx.sim.sim.tokens(thatReceived: e.payload) == Set(starters)
        #expect(reached, "not every subscriber got the event")
        #expect(fx.sim.sim.broadcasts(on: ch.apnsChannelID!).isEmpty, "broadcast cannot start an activity")
    }

    @Test func aLateJoinerGetsTheCurrentStateAtOnce() throws {
        let fx = try FanoutFixture(connections: 1)
        try fx.channel("m")
        try fx.subscribe("m", makeTokens(3, seed: 25))
        let e = try fx.waitFinished(try fx.publish("m", state: ["score": 3]))
        let late = makeTokens(1, seed: 26)[0]
        _ = try fx.store.register(channelID: "m", token: Hex.decode(late)!, kind: .activity, replaces: nil, expiresAt: nil)
        fx.engine.notifyRegistered(channelID: "m", token: Hex.decode(late)!)
        let deadline = Date(timeIntervalSinceNow: 10)
        while fx.sim.sim.pushes(to: late).isEmpty && Date() < deadline { usleep(5000) }
        #expect(fx.sim.sim.pushes(to: late).map(\.payload) == [e.payload])
    }

    @Test func thePriorityBudgetDowngradesToFive() throws {
        let fx = try FanoutFixture(connections: 1)
        try fx.channel("m", settings: ChannelSettings(priority10BudgetPerHour: 1))
        let t = makeTokens(1, seed: 27)
        try fx.subscribe("m", t)
        let a = try fx.waitFinished(try fx.publish("m", extra: ["alert": ["title": "Goal"]]))
        let b = try fx.waitFinished(try fx.publish("m", extra: ["alert": ["title": "Goal again"]]))
        #expect(a.priority == 10)
        #expect(b.priority == 5)
        #expect(fx.sim.sim.pushes(to: t[0]).map(\.priority) == [10, 5])
    }

    @Test func aMinimumIntervalHoldsUpdatesBackAndTheLatestWins() throws {
        let fx = try FanoutFixture(connections: 1)
        // 2.5 s: the two publishes below must land inside it even on a loaded machine (at
        // 600 ms a clean-clone CI run beside a release build sent the first of them at once).
        let interval = 2.5
        try fx.channel("m", settings: ChannelSettings(minIntervalMillis: Int64(interval * 1000)))
        let t = makeTokens(3, seed: 28)
        try fx.subscribe("m", t)
        let r1 = try fx.waitFinished(try fx.publish("m", state: ["score": 1]))
        // Both arrive inside the interval: they wait, and the second replaces the first.
        let u2 = try fx.publish("m", state: ["score": 2])
        let u3 = try fx.publish("m", state: ["score": 3])
        let r3 = try fx.waitFinished(u3)
        let r2 = try fx.waitFinished(u2)
        #expect(r1.state == .done)
        #expect(r2.state == .superseded, "a waiting update is replaced by a newer one")
        #expect(r3.state == .done)
        let gap = Double(r3.startedAtMillis! - r1.startedAtMillis!) / 1000
        #expect(gap >= interval, "updates started \(gap) s apart")
        for token in t { #expect(fx.sim.sim.pushes(to: token).map(\.payload) == [r1.payload, r3.payload]) }
        // An end is not held back.
        let end = try fx.publish("m", .end, state: ["score": 3])
        let rEnd = try fx.waitFinished(end)
        #expect(Double(rEnd.startedAtMillis! - r3.startedAtMillis!) / 1000 < interval)
    }
}
