import Foundation
import HeraldCore
import HeraldFanout
import HeraldSimulator
import HeraldStore
import HeraldTestSupport
import Testing

/// Late joiners in bulk (design delivery 9, issue #11): the new activity tokens of one
/// batch are caught up together, the waiting ones are bounded, and what the bound drops is
/// counted and reached by the next event.
@Suite struct FanoutCatchUpTests {
    /// A batch of late joiners on a small channel while a big fan-out keeps the sender
    /// full: with room for 1 000 waiting catch-ups, 1 500 new tokens leave exactly 500
    /// counted as dropped; the 1 000 get the current state once, then the next event; the
    /// 500 get only the next event; the big fan-out is not disturbed.
    @Test func aCatchUpStormIsBoundedCountedAndTheDroppedGetTheNextEvent() throws {
        let fx = try bigAndSmallChannels(bigSeed: 61, small: makeTokens(5, seed: 62)) { $0.maxPendingCatchUps = 1_000 }
        let current = try fx.waitFinished(try fx.publish("small", state: ["score": 1]))
        let big = try fx.publish("big")
        #expect(fx.waitAccepted(1_000))  // the sender is full of the big fan-out

        let joiners = makeTokens(1_500, seed: 63)
        let r = try fx.store.batch(
            channelID: "small", subscribe: joiners.map { SubscriptionInput(token: Hex.decode($0)!, kind: .activity) }, unsubscribe: [])
        #expect(r.joined.count == 1_500)
        fx.engine.notifyRegistered(channelID: "small", tokens: r.joined)

        let catchUps = fx.metrics.counter("herald_catchup_pushes_total", help: "Current-state pushes sent to late joiners.")
        let dropped = fx.metrics.counter(
            "herald_catchup_dropped_total",
            help: "Late joiners not sent the current state because 100000 were already waiting (they get the next event).")
        let deadline = Date(timeIntervalSinceNow: 30)
        while catchUps.value < 1_000 && Date() < deadline { usleep(2_000) }
        #expect(catchUps.value == 1_000)
        #expect(dropped.value == 500)

        let next = try fx.waitFinished(try fx.publish("small", state: ["score": 2]), timeout: 60)
        #expect(next.state == .done)
        // `r.joined` is in token order, the order they were queued in: the first 1 000 fit.
        let kept = Set(r.joined.prefix(1_000).map { Hex.encode($0) })
        var wrong = 0
        for t in joiners {
            let got = fx.sim.sim.pushes(to: t).map(\.payload)
            let expected = kept.contains(t) ? [current.payload, next.payload] : [next.payload]
            if got != expected { wrong += 1 }
        }
        #expect(wrong == 0, "\(wrong) of 1 500 joiners did not get exactly what they are owed")
        _ = try fx.waitFinished(big, timeout: 120)
    }

    /// One message for a whole batch: every new token is caught up exactly once with the
    /// current state, then gets the next event (published once every catch-up reached
    /// APNs; published earlier, the next event's own pass would reach them instead).
    @Test func aBatchOfLateJoinersEachGetTheCurrentStateOnceThenTheNextEvent() throws {
        let fx = try FanoutFixture(connections: 1)
        try fx.channel("m")
        try fx.subscribe("m", makeTokens(10, seed: 64))
        let current = try fx.waitFinished(try fx.publish("m", state: ["score": 1]))
        let joiners = makeTokens(300, seed: 65)
        let r = try fx.store.batch(
            channelID: "m", subscribe: joiners.map { SubscriptionInput(token: Hex.decode($0)!, kind: .activity) }, unsubscribe: [])
        fx.engine.notifyRegistered(channelID: "m", tokens: r.joined)
        let deadline = Date(timeIntervalSinceNow: 20)
        while joiners.contains(where: { fx.sim.sim.pushes(to: $0).isEmpty }) && Date() < deadline { usleep(5_000) }
        let next = try fx.waitFinished(try fx.publish("m", state: ["score": 2]))
        #expect(next.state == .done)
        let wrong = joiners.filter { fx.sim.sim.pushes(to: $0).map(\.payload) != [current.payload, next.payload] }
        #expect(wrong.isEmpty, "\(wrong.count) of 300 joiners did not get the current state, then the next event")
    }
}
