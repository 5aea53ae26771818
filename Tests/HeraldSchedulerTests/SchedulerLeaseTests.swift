import HeraldAPNS
import HeraldCore
import HeraldNet
import HeraldSender
import Testing

@testable import HeraldFanout
@testable import HeraldStore

/// Shared leases (several workers on one PostgreSQL), as the scheduler decides them: the
/// local deadline, renewals, a lease lost, the poll that takes channels and the shards a
/// lease covers. The fake storage grants the lease; the manual clock is the lease clock.
@Suite struct SchedulerLeaseTests {
    /// Past the local deadline (the database's 10 s less the 20% margin: 8 s) nothing more
    /// is handed to the sender, requests queued and not yet written are dropped, nothing is
    /// recorded for the event, and the lease is given back.
    @Test func nothingIsSentPastTheLocalDeadline() throws {
        let h = try Harness(capacity: 4, shared: FakeStorage.SharedLease(validFor: 10, renewFails: true)) { $0.batchSize = 2 }
        try h.channel()
        try h.subscribe(toks(0..<40))
        let e = try h.publish()
        h.turn(2)
        #expect(h.tokens.inFlight == 4)
        h.tokens.transmit(2)  // two written to APNs before the deadline: they still go
        h.clock.advance(by: 7.9)
        h.turn()
        #expect(h.engine.scheduler.knows(channelNum: e.channelNum), "given up before the deadline")
        h.clock.advance(by: 0.2)
        h.turn()
        #expect(!h.engine.scheduler.knows(channelNum: e.channelNum))
        h.tokens.answer()
        h.turn(3)
        #expect(h.tokens.log.count == 4, "sent past the deadline")
        #expect(h.tokens.inFlight == 0)
        #expect(h.tokens.delivered(tok(0)).count + h.tokens.delivered(tok(1)).count == 2)
        #expect(h.tokens.delivered(tok(2)).isEmpty && h.tokens.delivered(tok(3)).isEmpty, "a queued request went out")
        #expect(try h.event(e).state == .sending, "the event was recorded by a worker that lost its lease")
        #expect(h.storage.shared?.released.count == 1)
        #expect(h.counter("herald_fanout_leases_lost_total", ["reason": "expired"]) == 1)
    }

    /// Renewals (every third of the validity) move the deadline: a slow fan-out keeps its
    /// lease for as long as it takes.
    @Test func renewalsKeepASlowFanOutsLease() throws {
        let h = try Harness(capacity: 4, shared: FakeStorage.SharedLease(validFor: 3)) { $0.batchSize = 2 }
        try h.channel()
        try h.subscribe(toks(0..<20))
        let e = try h.publish()
        for _ in 0..<20 {
            h.turn()
            h.clock.advance(by: 0.5)
            h.tokens.answer(2)
        }
        #expect(h.engine.scheduler.knows(channelNum: e.channelNum))
        #expect((h.storage.shared?.renewals ?? 0) >= 8)
        h.settle()
        #expect(try h.event(e).state == .done)
        #expect(h.counter("herald_fanout_leases_lost_total", ["reason": "expired"]) == 0)
        for i in 0..<20 { #expect(h.tokens.delivered(tok(i)).count == 1) }
    }

    /// A renewal that finds the lease held by another worker gives the channel up at once:
    /// its queued requests are cancelled, nothing is recorded.
    @Test func aRenewalThatFindsTheLeaseGoneGivesTheChannelUp() throws {
        let h = try Harness(capacity: 4, shared: FakeStorage.SharedLease(validFor: 3)) { $0.batchSize = 2 }
        try h.channel()
        try h.subscribe(toks(0..<20))
        let e = try h.publish()
        h.turn(2)
        h.storage.shared?.lost = true
        h.clock.advance(by: 1.1)
        h.turn()
        #expect(!h.engine.scheduler.knows(channelNum: e.channelNum))
        #expect(h.tokens.answer() == 4)
        h.turn(2)
        #expect(h.tokens.log.count == 4)
        for i in 0..<4 { #expect(h.tokens.delivered(tok(i)).isEmpty) }
        #expect(try h.event(e).state == .sending)
        #expect(h.counter("herald_fanout_leases_lost_total", ["reason": "lost"]) == 1)
    }

    /// A fenced checkpoint that finds the lease gone (`LeaseLost`) is a signal, not a
    /// success: the scheduler gives the channel up before its next renewal.
    @Test func aFencedWriteUnderALostLeaseGivesTheChannelUp() throws {
        let h = try Harness(capacity: 4, shared: FakeStorage.SharedLease(validFor: 10)) { $0.batchSize = 2 }
        try h.channel()
        try h.subscribe(toks(0..<20))
        let e = try h.publish()
        h.turn(2)
        h.storage.shared?.lost = true
        h.tokens.answer(2)
        h.clock.advance(by: 0.3)  // a checkpoint is due; a renewal is not (3.3 s)
        h.turn(3)
        #expect(!h.engine.scheduler.knows(channelNum: e.channelNum))
        #expect(h.storage.shared?.renewals == 0)
        #expect(h.counter("herald_fanout_leases_lost_total", ["reason": "lost"]) == 1)
        #expect(try h.event(e).state == .sending)
    }

    /// The poll finds an event no notice told this worker of (published on another) and
    /// takes its channel; only the tokens of the lease's shards are sent, and late joiners
    /// of other shards are left to their holder.
    @Test func thePollTakesAChannelAndOnlyItsShardsAreSent() throws {
        let mine = ShardSet(0..<8)
        let h = try Harness(shared: FakeStorage.SharedLease(shards: mine, validFor: 10))
        try h.channel()
        let all = toks(0..<200)
        try h.subscribe(all)
        let e = try h.publish(notify: false)
        h.settle()
        #expect(try h.event(e).state == .done)
        for t in all { #expect(h.tokens.delivered(t).count == (mine.holds(token: t) ? 1 : 0)) }
        // Late joiners: a catch-up only for those of its shards.
        let late = toks(300..<340)
        try h.join(late)
        h.settle()
        for t in late { #expect(h.tokens.delivered(t).count == (mine.holds(token: t) ? 1 : 0)) }
    }

    /// A shared channel with nothing to do is handed back after `idleLeaseRelease`; its next
    /// event takes it again.
    @Test func anIdleChannelIsHandedBack() throws {
        let h = try Harness(shared: FakeStorage.SharedLease(validFor: 10)) { $0.idleLeaseRelease = 5 }
        try h.channel()
        try h.subscribe(toks(0..<4))
        let e1 = try h.publish(score: 1)
        h.settle()
        #expect(h.engine.scheduler.knows(channelNum: e1.channelNum))
        for _ in 0..<6 {
            h.clock.advance(by: 1)
            h.turn()
        }
        #expect(!h.engine.scheduler.knows(channelNum: e1.channelNum))
        #expect(h.storage.shared?.released.count == 1)
        #expect(h.counter("herald_fanout_leases_lost_total", ["reason": "expired"]) == 0)
        let e2 = try h.publish(score: 2)
        h.settle()
        #expect(try h.event(e2).state == .done)
        #expect(h.tokens.delivered(tok(0)).count == 2)
    }
}
