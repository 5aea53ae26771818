import Testing

@testable import HeraldCore
@testable import HeraldSender

/// The pool's decisions, driven without a socket: every event is a method call, every
/// decision an action to compare.
@Suite struct PoolStateMachineTests {
    func machine(_ n: Int = 2, max: Int = 1000) -> PoolStateMachine {
        PoolStateMachine(
            connections: n, maxStreamsPerConnection: max, reconnect: Backoff(base: 0.1, cap: 30), random: FastRandom(seed: 7))
    }

    /// Starts `n` slots and makes each ready and confirmed at `limit` streams.
    func running(_ n: Int = 2, limit: Int = 1000, max: Int = 1000) -> (PoolStateMachine, [PoolConnectionID]) {
        var m = machine(n, max: max)
        let ids = m.start().compactMap { if case .connect(_, let id) = $0 { id } else { nil } }
        for id in ids {
            m.connected(id, peerMaxConcurrentStreams: limit)
            m.streamOpened(id)
            m.streamEnded(id, confirmed: true)
        }
        return (m, ids)
    }

    @Test func startOpensEverySlotWithDistinctIDs() {
        var m = machine(3)
        let actions = m.start()
        #expect(actions.count == 3)
        let ids = actions.compactMap { if case .connect(_, let id) = $0 { id } else { nil } }
        #expect(Set(ids).count == 3)
        #expect(actions.compactMap { if case .connect(let s, _) = $0 { s } else { nil } } == [0, 1, 2])
        // Nothing is ready: nothing to submit.
        #expect(m.dispatch(queued: 10).isEmpty)
    }

    @Test func aFreshConnectionTakesOneStreamUntilAnAnswerConfirmsItsToken() {
        var m = machine(1)
        guard case .connect(_, let id) = m.start()[0] else {
            Issue.record("no connect")
            return
        }
        m.connected(id, peerMaxConcurrentStreams: 1000)
        #expect(m.dispatch(queued: 50) == [.submit(id, count: 1)])
        m.streamOpened(id)
        #expect(m.dispatch(queued: 49).isEmpty)
        // A 403 proves nothing: still one stream.
        m.streamEnded(id, confirmed: false)
        #expect(m.dispatch(queued: 49) == [.submit(id, count: 1)])
        m.streamOpened(id)
        m.streamEnded(id, confirmed: true)
        #expect(m.dispatch(queued: 5000) == [.submit(id, count: 1000)])
    }

    @Test func oneInFlightCountOverConnectionsAndDrains() {
        var (m, ids) = running(2)
        for _ in 0..<5 { m.streamOpened(ids[0]) }
        for _ in 0..<3 { m.streamOpened(ids[1]) }
        #expect(m.inFlight == 8)
        #expect(m.room(ids[0]) == 995)
        _ = m.goAway(ids[0])
        // Draining streams still count until they end.
        #expect(m.inFlight == 8)
        m.streamEnded(ids[0], confirmed: true)
        #expect(m.inFlight == 7)
        #expect(m.connection(ids[0])?.inFlight == 4)
        #expect(m.connection(ids[0])?.phase == .draining)
    }

    @Test func dispatchFillsRoundRobinWithinRoomAndQueue() {
        var (m, ids) = running(2, limit: 10)
        #expect(m.dispatch(queued: 15) == [.submit(ids[0], count: 10), .submit(ids[1], count: 5)])
        // The starting slot rotates.
        #expect(m.dispatch(queued: 15) == [.submit(ids[1], count: 10), .submit(ids[0], count: 5)])
        #expect(m.dispatch(queued: 0).isEmpty)
    }

    @Test func streamLimitChangesApplyAtOnce() {
        var (m, ids) = running(1, limit: 1000, max: 500)
        #expect(m.room(ids[0]) == 500, "our own cap is below the peer's")
        for _ in 0..<3 { m.streamOpened(ids[0]) }
        m.settingsChanged(ids[0], maxConcurrentStreams: 1)
        #expect(m.room(ids[0]) == 0, "three open, the peer now allows one")
        m.streamEnded(ids[0], confirmed: true)
        m.streamEnded(ids[0], confirmed: true)
        #expect(m.room(ids[0]) == 0)
        m.streamEnded(ids[0], confirmed: true)
        #expect(m.room(ids[0]) == 1)
        m.settingsChanged(ids[0], maxConcurrentStreams: 1000)
        #expect(m.room(ids[0]) == 500)
    }

    @Test func goAwayDrainsTheConnectionAndOpensAFreshOneInItsSlot() {
        var (m, ids) = running(2)
        m.streamOpened(ids[0])
        let actions = m.goAway(ids[0])
        guard case .connect(0, let fresh) = actions.first, actions.count == 1 else {
            Issue.record("expected one connect in slot 0, got \(actions)")
            return
        }
        #expect(fresh != ids[0])
        #expect(m.room(ids[0]) == 0, "a draining connection takes nothing")
        #expect(m.dispatch(queued: 100) == [.submit(ids[1], count: 100)], "the fresh one is not ready yet")
        // A second GOAWAY on the draining connection changes nothing.
        #expect(m.goAway(ids[0]).isEmpty)
        // The drained connection closing is no failure: no reconnect.
        m.streamEnded(ids[0], confirmed: true)
        #expect(m.closed(ids[0]).isEmpty)
        #expect(m.connection(ids[0]) == nil)
        #expect(m.slots[0].failures == 0)
    }

    @Test func refusedStreamsEndWithoutConfirming() {
        var m = machine(1)
        guard case .connect(_, let id) = m.start()[0] else { return }
        m.connected(id, peerMaxConcurrentStreams: 100)
        m.streamOpened(id)
        m.streamEnded(id, confirmed: false)
        #expect(m.inFlight == 0)
        #expect(m.connection(id)?.confirmed == false)
        #expect(m.room(id) == 1)
    }

    @Test func retireClosesAndReplaces() {
        var (m, ids) = running(2)
        let actions = m.retire(ids[1])
        #expect(actions.count == 2)
        #expect(actions.first == .close(ids[1]))
        guard case .connect(1, _) = actions.last else {
            Issue.record("no reconnect in slot 1: \(actions)")
            return
        }
        #expect(m.connection(ids[1])?.phase == .draining)
        #expect(m.retire(ids[1]).isEmpty, "already retired")
    }

    @Test func failuresReconnectWithGrowingBackoffAndResetWhenReady() {
        var m = machine(1)
        guard case .connect(_, var id) = m.start()[0] else { return }
        var bounds: [Double] = []
        for attempt in 1...8 {
            let actions = m.closed(id)
            guard case .schedule(.reconnect(slot: 0), let after) = actions.first, actions.count == 1 else {
                Issue.record("attempt \(attempt): \(actions)")
                return
            }
            let bound = m.reconnect.bound(attempt)
            #expect(after >= bound / 2 && after <= bound, "jittered within [bound/2, bound]")
            bounds.append(bound)
            #expect(m.slots[0].failures == attempt)
            let again = m.timerFired(.reconnect(slot: 0))
            guard case .connect(0, let next) = again.first else {
                Issue.record("no reconnect after the timer")
                return
            }
            id = next
        }
        #expect(bounds == [0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 12.8])
        #expect(m.timerFired(.reconnect(slot: 0)).isEmpty, "a stale timer does nothing")
        m.connected(id, peerMaxConcurrentStreams: 100)
        #expect(m.slots[0].failures == 0)
    }

    @Test func aClosedConnectionForgetsItsStreams() {
        var (m, ids) = running(2)
        for _ in 0..<4 { m.streamOpened(ids[0]) }
        _ = m.closed(ids[0])
        #expect(m.inFlight == 0)
        let ignored = m.streamEndedIsIgnoredForUnknown(ids[0])
        #expect(ignored)
    }

    @Test func shutdownClosesEverythingAndNeverReconnects() {
        var (m, ids) = running(2)
        _ = m.goAway(ids[0])
        let actions = m.shutdown()
        #expect(actions.contains(.close(ids[0])))
        #expect(actions.contains(.close(ids[1])))
        #expect(actions.count == 3, "two slots (one fresh, connecting) and one draining")
        #expect(m.closed(ids[1]).isEmpty)
        #expect(m.timerFired(.reconnect(slot: 1)).isEmpty)
        #expect(m.dispatch(queued: 10).isEmpty)
    }

    @Test func aConnectionAdoptsANewTokenOnlyAfterTwentyMinutes() {
        var (m, ids) = running(1)
        let t1 = BearerToken(header: "bearer one", issuedAt: 0, generation: 1)
        let t2 = BearerToken(header: "bearer two", issuedAt: 1800, generation: 2)
        #expect(m.bearer(for: ids[0], latest: t1, now: 0) == t1)
        #expect(m.bearer(for: ids[0], latest: t2, now: 60) == t1, "changed a minute ago: keep")
        #expect(m.bearer(for: ids[0], latest: t2, now: 20 * 60 + 1) == t2)
        #expect(m.bearer(for: ids[0], latest: t2, now: 20 * 60 + 2) == t2)
    }

    @Test func anExpiredTokenIsReplacedAtOnce() {
        var (m, ids) = running(1)
        let t1 = BearerToken(header: "bearer one", issuedAt: 0, generation: 1)
        let t2 = BearerToken(header: "bearer two", issuedAt: 60, generation: 2)
        _ = m.bearer(for: ids[0], latest: t1, now: 0)
        #expect(m.tokenExpired(ids[0]) == 1)
        #expect(m.bearer(for: ids[0], latest: t2, now: 61) == t2, "ExpiredProviderToken: no 20-minute wait")
        // A fresh connection (after GOAWAY) takes the newest token at once.
        guard case .connect(_, let fresh) = m.goAway(ids[0]).first else { return }
        m.connected(fresh, peerMaxConcurrentStreams: 100)
        #expect(m.bearer(for: fresh, latest: t2, now: 62) == t2)
    }
}

extension PoolStateMachine {
    /// True when an event for a forgotten connection leaves the count alone.
    mutating func streamEndedIsIgnoredForUnknown(_ id: PoolConnectionID) -> Bool {
        let before = inFlight
        streamEnded(id, confirmed: true)
        return inFlight == before && connection(id) == nil
    }
}
