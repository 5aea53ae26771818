import HeraldAPNS
import HeraldCore
import HeraldNet
import HeraldSender
import Testing

@testable import HeraldFanout
@testable import HeraldStore

/// Order and latest-wins rules (docs/architecture.md, "The fan-out rules" 1–5 and 8), on
/// the fake storage and sender.
@Suite struct SchedulerOrderTests {
    /// Rule 1: a notice for `seq` n takes every unfinished event up to n, in order; a late
    /// notice of an event already taken is ignored.
    @Test func aStartHeardOfLateStillGoesOutBeforeTheUpdateAfterIt() throws {
        let h = try Harness()
        try h.channel()
        try h.subscribe(toks(0..<3), kind: .pushToStart)
        try h.subscribe(toks(10..<13))
        let start = try h.publish(.start, notify: false)
        let update = try h.publish(score: 2, notify: false)
        h.engine.notifyEvent(update.id)
        h.settle()
        h.engine.notifyEvent(start.id)  // long after, as from a stalled API thread
        h.settle()
        let log = h.tokens.log.map(\.path)
        #expect(log.count == 6, "each event once per token, nothing again for the late notice")
        #expect(Array(log.prefix(3)) == toks(0..<3).map { APNSRequests.tokenPath(Hex.encode($0)) })
        #expect(try h.event(start).state == .done)
        #expect(try h.event(update).state == .done)
    }

    /// Rules 2 and 8: a newer update supersedes the running one; the subscribers it had not
    /// reached get only the newer one, starting where the older one's checkpoint was.
    @Test func aNewerUpdateSupersedesTheRunningOneAndStartsWhereItStopped() throws {
        let h = try Harness(capacity: 4) { $0.batchSize = 2 }
        try h.channel()
        try h.subscribe(toks(0..<10))
        let u1 = try h.publish(score: 1)
        h.turn(3)  // batches 0 and 1 taken; batch 2 refused (the sender is full)
        #expect(h.tokens.inFlight == 4)
        h.tokens.answer()
        h.turn()  // the answers move u1's checkpoint to token 3; batch 2 (tokens 4, 5) goes out
        #expect(h.tokens.inFlight == 2)
        let u2 = try h.publish(score: 2)
        h.turn()
        h.settle()
        let e1 = try h.event(u1)
        let e2 = try h.event(u2)
        #expect(e1.state == .superseded && e1.supersededBy == u2.id)
        #expect(e2.state == .done)
        for t in toks(0..<10) {
            let got = h.tokens.delivered(t)
            let want = got.count == 2 ? [u1.payload, u2.payload] : [u2.payload]
            #expect(got == want, "token \(t[1]) got \(got.count)")
        }
        #expect(toks(0..<10).filter { h.tokens.delivered($0).count == 2 }.count == 4, "u1 reached the first two batches only")
        // Where u2 started: token 4, right after u1's checkpoint (cursor inheritance).
        let u2Paths = h.tokens.log.map(\.path).suffix(10)
        #expect(u2Paths.first == APNSRequests.tokenPath(Hex.encode(tok(4))))
        #expect(h.counter("herald_events_superseded_total") == 1)
    }

    /// Rule 3: a queued start is never superseded by the updates after it; rule 2 for the
    /// queued update between them.
    @Test func aQueuedStartIsNeverSupersededAndAQueuedUpdateIs() throws {
        let h = try Harness()
        try h.channel()
        try h.subscribe(toks(0..<2), kind: .pushToStart)
        try h.subscribe(toks(10..<12))
        let s = try h.publish(.start, notify: false)
        let u1 = try h.publish(score: 1, notify: false)
        let u2 = try h.publish(score: 2, notify: false)
        h.engine.notifyEvent(u2.id)
        h.settle()
        #expect(try h.event(s).state == .done)
        #expect(try h.event(u1).state == .superseded && h.event(u1).supersededBy == u2.id)
        #expect(try h.event(u2).state == .done)
        for t in toks(0..<2) { #expect(h.tokens.delivered(t) == [s.payload]) }
        for t in toks(10..<12) { #expect(h.tokens.delivered(t) == [u2.payload]) }
    }

    /// Rules 3 and 4: an end supersedes the updates waiting before it and is never
    /// superseded itself (a start after it runs after it).
    @Test func anEndSupersedesPendingUpdatesAndIsNeverSuperseded() throws {
        let h = try Harness()
        try h.channel(settings: ChannelSettings(minIntervalMillis: 10_000))
        try h.subscribe(toks(0..<3))
        try h.subscribe(toks(20..<22), kind: .pushToStart)
        let u1 = try h.publish(score: 1)
        h.settle()
        let u2 = try h.publish(score: 2)  // held by the minimum interval
        let u3 = try h.publish(score: 3)
        let end = try h.publish(.end, score: 4)
        let start = try h.publish(.start, score: 5)
        h.settle()
        #expect(try h.event(u1).state == .done)
        #expect(try h.event(u2).state == .superseded && h.event(u2).supersededBy == u3.id)
        #expect(try h.event(u3).state == .superseded && h.event(u3).supersededBy == end.id)
        #expect(try h.event(end).state == .done)
        #expect(try h.event(start).state == .done)
        for t in toks(0..<3) { #expect(h.tokens.delivered(t) == [u1.payload, end.payload]) }
        for t in toks(20..<22) { #expect(h.tokens.delivered(t) == [start.payload]) }
    }

    /// Rule 5: nothing of the newer event leaves while the superseded one still has
    /// requests in flight.
    @Test func aSupersededRunDrainsBeforeTheNextSends() throws {
        let h = try Harness { $0.batchSize = 2 }
        try h.channel()
        try h.subscribe(toks(0..<4))
        let u1 = try h.publish(score: 1)
        h.turn()
        #expect(h.tokens.inFlight == 2)
        let u2 = try h.publish(score: 2)
        h.turn(5)
        #expect(h.tokens.log.count == 2, "u2 sent while u1 had requests in flight")
        h.tokens.answer()  // cancelled: u1 was superseded before they were sent
        h.settle()
        #expect(try h.event(u1).state == .superseded)
        #expect(try h.event(u2).state == .done)
        for t in toks(0..<4) { #expect(h.tokens.delivered(t) == [u2.payload]) }
        #expect(h.tokens.log.count == 6)
    }
}
