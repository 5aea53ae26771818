import Foundation
import HeraldCore
import HeraldFanout
import HeraldSimulator
import HeraldStore
import HeraldTestSupport
import Testing

/// Delivery promise 4 (design): per token, never an older event after a newer one — when
/// the scheduler hears of events out of order, and when a late joiner's catch-up push
/// meets the next event.
@Suite struct FanoutOrderTests {
    /// Two API threads publishing on one channel commit in sequence order but may tell the
    /// scheduler in the other order (a 200-publisher load test caught it: 12 subscribers
    /// ended on the older state).
    @Test func aLateNotificationNeverSendsAnOlderEventAfterANewerOne() throws {
        let fx = try FanoutFixture(connections: 1)
        try fx.channel("m")
        let tokens = makeTokens(20, seed: 41)
        try fx.subscribe("m", tokens)
        let older = try fx.publish("m", state: ["score": 1], notify: false)
        let newer = try fx.publish("m", state: ["score": 2], notify: false)
        fx.engine.notifyEvent(newer.id)
        let rNewer = try fx.waitFinished(newer)
        fx.engine.notifyEvent(older.id)  // long after, as from a stalled thread
        let rOlder = try fx.waitFinished(older, timeout: 10)
        #expect(rNewer.state == .done)
        #expect(rOlder.state == .superseded, "the older update was \(rOlder.state.rawValue)")
        #expect(rOlder.supersededBy == newer.id)
        let wrong = tokens.filter { fx.sim.sim.pushes(to: $0).map(\.payload) != [rNewer.payload] }
        #expect(wrong.isEmpty, "\(wrong.count) of 20 subscribers did not get exactly the newer update")
    }

    /// A `start` is never superseded: heard of late, it still goes out, before the update
    /// published after it.
    @Test func aStartHeardOfLateStillGoesOutBeforeTheUpdateAfterIt() throws {
        let fx = try FanoutFixture(connections: 1)
        try fx.channel("m")
        let starters = makeTokens(5, seed: 42)
        try fx.subscribe("m", starters, kind: .pushToStart)
        try fx.subscribe("m", makeTokens(5, seed: 43))
        let start = try fx.publish("m", .start, state: ["score": 0], notify: false)
        let update = try fx.publish("m", state: ["score": 1], notify: false)
        fx.engine.notifyEvent(update.id)
        let rUpdate = try fx.waitFinished(update)
        fx.engine.notifyEvent(start.id)
        let rStart = try fx.waitFinished(start, timeout: 10)
        #expect(rStart.state == .done)
        #expect(rStart.counters.sent == 5)
        #expect(rUpdate.state == .done)
        #expect(try #require(rStart.startedAtMillis) <= (try #require(rUpdate.startedAtMillis)))
    }

    /// A late joiner's catch-up push is one request on its own; the next event on its
    /// channel waits for it. Without that, a small channel's next event (sent in the
    /// sender's express lane) overtook a catch-up queued behind a big fan-out.
    @Test func aCatchUpIsNeverOvertakenByTheNextEvent() throws {
        let fx = try bigAndSmallChannels(bigSeed: 44, small: makeTokens(5, seed: 45))
        let current = try fx.waitFinished(try fx.publish("small", state: ["score": 1]))
        let big = try fx.publish("big")
        #expect(fx.waitAccepted(1_000))  // the sender is full of the big fan-out

        let late = makeTokens(1, seed: 46)[0]
        _ = try fx.store.register(channelID: "small", token: Hex.decode(late)!, kind: .activity, replaces: nil, expiresAt: nil)
        fx.engine.notifyRegistered(channelID: "small", token: Hex.decode(late)!)
        let catchUps = fx.metrics.counter("herald_catchup_pushes_total", help: "Current-state pushes sent to late joiners.")
        let deadline = Date(timeIntervalSinceNow: 10)
        while catchUps.value == 0 && Date() < deadline { usleep(1_000) }
        #expect(catchUps.value == 1, "the catch-up was not handed to the sender")
        let next = try fx.waitFinished(try fx.publish("small", state: ["score": 2]), timeout: 30)
        #expect(next.state == .done)
        let got = fx.sim.sim.pushes(to: late).map(\.payload)
        #expect(got == [current.payload, next.payload], "the late joiner got \(got.map { String(decoding: $0, as: UTF8.self) })")
        #expect(try fx.store.event(channelID: "big", eventID: big.id).state == .sending, "the big fan-out should still be running")
        _ = try fx.waitFinished(big, timeout: 60)
    }

    /// While the channel's next event waits (here held by the minimum interval), a late
    /// joiner gets no catch-up: the waiting event's pass reaches it, once, in order.
    @Test func aLateJoinerWaitsForAnEventAlreadyOnItsWay() throws {
        let fx = try FanoutFixture(connections: 1)
        // Long enough that the registration below lands inside it on a loaded machine.
        try fx.channel("m", settings: ChannelSettings(minIntervalMillis: 2_500))
        try fx.subscribe("m", makeTokens(3, seed: 47))
        let first = try fx.waitFinished(try fx.publish("m", state: ["score": 1]))
        let waiting = try fx.publish("m", state: ["score": 2])
        let late = Hex.decode(makeTokens(1, seed: 48)[0])!
        _ = try fx.store.register(channelID: "m", token: late, kind: .activity, replaces: nil, expiresAt: nil)
        fx.engine.notifyRegistered(channelID: "m", token: late)
        let done = try fx.waitFinished(waiting)
        #expect(first.state == .done)
        #expect(done.state == .done)
        #expect(fx.sim.sim.pushes(to: Hex.encode(late)).map(\.payload) == [done.payload])
        #expect(fx.metrics.counter("herald_catchup_pushes_total", help: "Current-state pushes sent to late joiners.").value == 0)
    }

    /// After a restart the scheduler has not run the channel's finished events; a late
    /// joiner still gets the current state at once, and they are not run again.
    @Test func aLateJoinerAfterARestartGetsTheCurrentState() throws {
        let fx = try FanoutFixture(connections: 1)
        try fx.channel("m")
        let tokens = makeTokens(3, seed: 49)
        try fx.subscribe("m", tokens)
        let current = try fx.waitFinished(try fx.publish("m", state: ["score": 1]))
        fx.engine.stop()
        let metrics = MetricsRegistry()
        let engine = FanoutEngine(
            store: fx.store, transports: SharedTransports(tokens: fx.pool, broadcast: fx.broadcastPool), config: FanoutConfig(),
            logger: .discard, metrics: metrics)
        engine.start()
        defer { engine.stop() }
        let late = Hex.decode(makeTokens(1, seed: 50)[0])!
        _ = try fx.store.register(channelID: "m", token: late, kind: .activity, replaces: nil, expiresAt: nil)
        engine.notifyRegistered(channelID: "m", token: late)
        engine.notifyEvent(current.id)  // a late notification of the finished event: not run again
        let deadline = Date(timeIntervalSinceNow: 10)
        while fx.sim.sim.pushes(to: Hex.encode(late)).isEmpty && Date() < deadline { usleep(5_000) }
        #expect(fx.sim.sim.pushes(to: Hex.encode(late)).map(\.payload) == [current.payload])
        let published = try fx.publish("m", state: ["score": 2], notify: false)
        engine.notifyEvent(published.id)
        let next = try fx.waitFinished(published)
        #expect(next.state == .done)
        for t in tokens { #expect(fx.sim.sim.pushes(to: t).map(\.payload) == [current.payload, next.payload]) }
    }
}
