import HeraldAPNS
import HeraldCore
import HeraldNet
import HeraldSender
import Testing

@testable import HeraldFanout
@testable import HeraldStore

/// A thousand random steps — publishes, requests written to APNs (delivered even if
/// cancelled after), answers (delivered, retried, 410, failed), commits, clock steps, late
/// joiners, crashes (what was written may still arrive) — then the delivery promises are checked on what
/// every device received: per-token order, latest wins, at-least-once, bounded duplicates.
@Suite struct SchedulerInterleavingTests {
    static let window = 4  // maxBatchesPastCheckpoint
    static let batch = 3

    @Test(arguments: [1, 2, 3, 4] as [UInt64])
    func aThousandStepsKeepTheDeliveryPromises(seed: UInt64) throws {
        var rng = FastRandom(seed: seed)
        let h = try Harness(capacity: 24) {
            $0.batchSize = Self.batch
            $0.maxBatchesPastCheckpoint = Self.window
            $0.maxBatchesInFlight = 8  // more than the window: the window is what holds a run back
            $0.checkpointInterval = 0.25
        }
        let names = ["a", "b", "c"]
        var audience: [String: [[UInt8]]] = [:]
        var next = 0
        for (i, n) in names.enumerated() {
            try h.channel(n, settings: ChannelSettings(minIntervalMillis: i == 2 ? 300 : 0))
            let list = toks(next..<next + 8 + i * 9)
            next += list.count
            audience[n] = list
            try h.subscribe(n, list)
            try h.subscribe(n, toks(next..<next + 2), kind: .pushToStart)
            next += 2
        }
        // Tokens APNs calls unregistered (pruned once it says so); the others live throughout.
        let dying = Set(names.flatMap { audience[$0]! }.enumerated().filter { $0.offset % 7 == 3 }.map(\.element))
        let dyingPaths = Set(dying.map { APNSRequests.tokenPath(Hex.encode($0)) })
        var joined = Set<[UInt8]>()
        var published: [String: [EventRecord]] = [:]
        var crashes = 0
        /// Crashes while each event was unfinished in storage: each may resend it to at most
        /// a duplicate window of tokens.
        var crashesDuring: [String: Int] = [:]

        func publish(_ n: String) throws {
            let ch = try h.storage.channel(id: n)!
            let kind: LiveActivityEventKind
            if ch.lifecycle == .ended {
                kind = .start
            } else {
                kind = rng.next() % 20 == 0 ? .end : .update
            }
            published[n, default: []].append(try h.publish(n, kind, score: Int(rng.next() % 1000)))
        }

        for _ in 0..<1_000 {
            let r = rng.next() % 100
            switch r {
            case 0..<25: try publish(names[Int(rng.next() % 3)])
            case 25..<60:
                // Any of those in flight, not the oldest first: APNs answers streams in any order.
                let share = rng.next() % 4 + 2
                let roll = rng.next() % 100
                let attempts = roll < 10 ? 3 : 1
                _ = h.tokens.answer(
                    where: { _, _ in rng.next() % share == 0 }, attempts: attempts,
                    { req in
                        if dyingPaths.contains(req.path) {
                            return .outcome(.dropToken(reason: .unregistered, since: h.clock.nowMillis()), nil)
                        }
                        switch roll {
                        case 0..<4: return .exhausted(.retry(reason: .internalServerError, status: 500, after: nil))
                        case 4..<6: return .outcome(.retry(reason: .tooManyRequests, status: 429, after: 1), nil)
                        default: return .outcome(.delivered(apnsID: nil, uniqueID: nil), nil)
                        }
                    })
            case 60..<70: h.storage.commit()
            case 70..<80: h.tokens.transmit(Int(rng.next() % 12))
            case 80..<90: h.clock.advance(by: Double(rng.next() % 300) / 1000)
            case 90..<97:
                let n = names[Int(rng.next() % 3)]
                let t = tok(next)
                next += 1
                joined.insert(t)
                audience[n, default: []].append(t)
                try h.join(n, [t])
            case 97..<98:
                for e in try h.storage.unfinishedEvents() { crashesDuring[e.id, default: 0] += 1 }
                try h.crash { _ in rng.next() % 2 == 0 }
                crashes += 1
            default: break
            }
            h.turn(commit: false)
        }

        // The end: every channel gets a last update, and everything is answered delivered.
        for n in names {
            if try h.storage.channel(id: n)!.lifecycle == .ended { published[n, default: []].append(try h.publish(n, .start)) }
            published[n, default: []].append(try h.publish(n, .update, score: 9999))
        }
        for _ in 0..<3_000 {
            h.turn()
            h.tokens.answer { req in
                dyingPaths.contains(req.path)
                    ? .outcome(.dropToken(reason: .unregistered, since: h.clock.nowMillis()), nil)
                    : .outcome(.delivered(apnsID: nil, uniqueID: nil), nil)
            }
            h.clock.advance(by: 0.1)
        }

        #expect(try h.storage.unfinishedEvents().isEmpty, "events left unfinished")
        #expect(crashes > 0 || seed > 2)
        var seqOf: [[UInt8]: (channel: String, seq: Int64, id: String)] = [:]
        for (n, list) in published { for e in list { seqOf[e.payload] = (n, e.seq, e.id) } }
        for (n, list) in published {
            // Latest wins: only updates are superseded, by a later event of their channel.
            for e in list {
                let stored = try h.event(e)
                if stored.state == .superseded {
                    #expect(e.kind == .update)
                    let by = list.first { $0.id == stored.supersededBy }
                    #expect(by.map { $0.seq > e.seq } == true, "\(e.id) superseded by \(stored.supersededBy ?? "nothing")")
                }
            }
            let last = list.last!
            #expect(try h.event(last).state == .done)
            for t in audience[n]! where !dying.contains(t) {
                let got = h.tokens.delivered(t).compactMap { seqOf[$0] }
                // Per token, never an older event after a newer one.
                let seqs = got.map(\.seq)
                #expect(seqs == seqs.sorted(), "token \(Hex.encode(t).prefix(4)) of \(n) got \(seqs)")
                // At least once: the last event reached every live subscriber.
                #expect(seqs.contains(last.seq), "token \(Hex.encode(t).prefix(4)) of \(n) missed the last event (got \(seqs))")
                // Bounded duplicates: one per crash during the event, one more for a late
                // joiner's catch-up.
                var counts: [String: Int] = [:]
                for g in got { counts[g.id, default: 0] += 1 }
                for (id, c) in counts {
                    let bound = 1 + crashesDuring[id, default: 0] + (joined.contains(t) ? 1 : 0)
                    #expect(c <= bound, "token \(Hex.encode(t).prefix(4)) got \(id) \(c) times")
                }
            }
            // Per event, the resends after crashes stay within the duplicate window.
            for e in list {
                let extra = audience[n]!.reduce(0) { sum, t in
                    let c = h.tokens.delivered(t).filter { $0 == e.payload }.count
                    return sum + max(0, c - 1 - (joined.contains(t) ? 1 : 0))
                }
                let during = crashesDuring[e.id, default: 0]
                #expect(extra <= during * Self.window * Self.batch, "\(e.id): \(extra) duplicates after \(during) crashes")
            }
        }
    }
}
