import Foundation
import HeraldCore
import HeraldSQL
import HeraldSimulator
import HeraldTestSupport
import Testing

/// Issue #6, "Faults": `herald serve` killed with SIGKILL at random points of long fan-outs,
/// ten times in a row, restarted each time. Several events on a few channels (an update
/// superseded by a newer one, a start, ends) all complete; no subscription is lost; the
/// database stays intact; each restart resends an event to at most the documented window
/// (docs/operations.md, "After a crash": 32 batches of 500 past the last committed
/// checkpoint, per event in progress).
extension FaultTests {
    @Suite struct RepeatedKills {
        /// One event as the database has it.
        struct StoredEvent {
            let id: String
            let channel: String
            let seq: Int64
            let kind: String
            let state: String
            let payload: [UInt8]
            /// The checkpoint (hex; "" for none): the pass starts after `passStart`, and every
            /// target up to `cursor` in pass order is finished.
            let passStart: String
            let cursor: String
            let wrapped: Bool

            /// Whether the checkpoint says `token` (hex, lower case) is finished.
            func checkpointCovers(_ token: String) -> Bool {
                if wrapped { return token > passStart || token <= cursor }
                return token > passStart && token <= cursor
            }
        }

        /// Reads the events (and checks integrity) from the database of a dead server.
        static func inspect(_ path: String) throws -> (events: [StoredEvent], integrity: String) {
            let db = try Database(path: path)
            defer { db.close() }
            let rows = try db.read { c in
                try c.query(
                    """
                    SELECT e.id, c.id, e.seq, e.kind, e.state, e.payload, e.pass_start, e.cursor, e.wrapped
                    FROM events e JOIN channels c ON c.num = e.channel ORDER BY e.channel, e.seq
                    """)
            }
            let events = rows.map {
                StoredEvent(
                    id: $0[0].textValue ?? "", channel: $0[1].textValue ?? "", seq: $0[2].int64Value ?? 0, kind: $0[3].textValue ?? "",
                    state: $0[4].textValue ?? "", payload: $0[5].blobValue ?? [], passStart: Hex.encode($0[6].blobValue ?? []),
                    cursor: Hex.encode($0[7].blobValue ?? []), wrapped: $0[8].int64Value == 1)
            }
            return (events, try db.integrityCheck())
        }

        /// How many times each token received each event (by payload), from the ledger.
        static func receipts(_ sim: APNSSimulator, _ tokens: [String], _ events: [StoredEvent]) -> [String: [String: Int]] {
            var byPayload: [[UInt8]: String] = [:]
            for e in events { byPayload[e.payload] = e.id }
            var out: [String: [String: Int]] = [:]
            for t in tokens {
                var m: [String: Int] = [:]
                for p in sim.pushes(to: t) { m[byPayload[p.payload] ?? "unknown", default: 0] += 1 }
                if !m.isEmpty { out[t] = m }
            }
            return out
        }

        @Test func tenKillsMidFanOutLoseNothingAndResendOnlyTheWindow() throws {
            let window = 32 * 500  // docs/operations.md, "After a crash"
            // Random kill points; HERALD_FAULT_SEED replays a run (the seed is printed).
            var clockRandom = FastRandom(seed: UInt64(Date().timeIntervalSince1970 * 1000))
            let seed = ProcessInfo.processInfo.environment["HERALD_FAULT_SEED"].flatMap { UInt64($0) } ?? clockRandom.next()
            var random = FastRandom(seed: seed)
            print("kills: seed \(seed) (HERALD_FAULT_SEED=\(seed) replays these kill points)")
            // A slow APNs: 4 connections × 50 streams, 5 ms per answer.
            let h = try ServedHerald {
                $0.maxConcurrentStreams = 50
                $0.faults.latency = 0.005
            }
            let long = makeTokens(40_000, seed: 701)
            let other = makeTokens(4_000, seed: 702)
            let sideActivity = makeTokens(1_500, seed: 703)
            let sideStart = makeTokens(500, seed: 704)
            let all = long + other + sideActivity + sideStart
            for c in ["long", "other", "side"] { try h.channel(c) }
            try h.subscribe("long", long)
            try h.subscribe("other", other)
            try h.subscribe("side", sideActivity)
            try h.subscribe("side", sideStart, kind: "push-to-start")
            let countsBefore = try ["long", "other", "side"].map { try h.subscriberCount($0) }

            let start: JSON = [
                "event": "start", "content-state": ["home": 0, "away": 0], "attributes-type": "MatchAttributes",
                "attributes": ["matchID": "side"], "alert": ["title": "Kick-off", "body": "Follow it live"],
            ]
            func end(_ home: Int) -> JSON { ["event": "end", "content-state": ["home": .int(Int64(home)), "away": 9]] }
            // Published before the first kill, after the third restart, after the sixth.
            // Every payload differs (the ledger is matched to events by payload).
            let schedule: [Int: [(String, JSON)]] = [
                0: [("long", update(1)), ("other", update(11)), ("other", update(12)), ("side", start)],
                3: [("long", update(2)), ("side", update(21))],
                6: [("long", end(1)), ("side", end(2))],
            ]
            /// The subscribers an event of `kind` on `channel` goes to.
            func targets(_ channel: String, _ kind: String) -> [String] {
                switch channel {
                case "long": long
                case "other": other
                default: kind == "start" ? sideStart : sideActivity
                }
            }
            var snapshots: [[String: [String: Int]]] = []
            var unfinishedAtKill: [[StoredEvent]] = []
            var uncoveredByCheckpoint = 0
            var killsMidFanOut = 0
            for life in 0..<10 {
                for (channel, aps) in schedule[life] ?? [] { _ = try h.publishAccepted(channel, aps) }
                // A random point: after 200 to 3 000 more pushes reached APNs (at most 30 000
                // in ten lives: the end on "long" alone needs 40 000, so every kill
                // interrupts a fan-out).
                let target = h.sim.sim.stats().accepted + 200 + Int(random.next() % 2_800)
                Poll.until(timeout: 30, interval: 0.001) { h.sim.sim.stats().accepted >= target }
                h.serve.kill()
                let (events, integrity) = try Self.inspect(h.db)
                #expect(integrity == "ok", "after kill \(life + 1)")
                let unfinished = events.filter { $0.state == "queued" || $0.state == "sending" }
                if !unfinished.isEmpty { killsMidFanOut += 1 }
                unfinishedAtKill.append(unfinished)
                let t0 = Date()
                let snapshot = Self.receipts(h.sim.sim, all, events)
                snapshots.append(snapshot)
                // What a committed checkpoint calls finished really reached APNs.
                for e in unfinished {
                    let u = targets(e.channel, e.kind).filter { e.checkpointCovers($0) && snapshot[$0]?[e.id] == nil }.count
                    if u > 0 {
                        print(
                            "kills: kill \(life + 1): \(e.channel) \(e.kind) seq \(e.seq) (\(e.state)) covers \(u) tokens that never got it"
                        )
                    }
                    uncoveredByCheckpoint += u
                }
                print(
                    "kills: kill \(life + 1) at \(h.sim.sim.stats().accepted) pushes, unfinished \(unfinished.count), snapshot \(String(format: "%.2f", Date().timeIntervalSince(t0))) s"
                )
                try h.restart()
            }
            #expect(killsMidFanOut == 10, "every kill should interrupt a fan-out")
            #expect(uncoveredByCheckpoint == 0, "a checkpoint covered tokens that never got the event")

            // The last life runs to the end.
            var (events, _) = try Self.inspect(h.db)
            let deadline = Date(timeIntervalSinceNow: 120)
            for e in events {
                let left = max(1, deadline.timeIntervalSinceNow)
                #expect(try h.serve.waitEvent(e.channel, e.id, timeout: left) != nil, "\(e.channel) \(e.kind) \(e.seq) never ended")
            }
            let countsAfter = try ["long", "other", "side"].map { try h.subscriberCount($0) }
            h.serve.stop()
            let integrity: String
            (events, integrity) = try Self.inspect(h.db)
            #expect(integrity == "ok")
            #expect(countsAfter == countsBefore, "subscriptions lost: \(countsBefore) → \(countsAfter)")
            #expect(countsBefore == [Int64(long.count), Int64(other.count), Int64(sideActivity.count + sideStart.count)])
            snapshots.append(Self.receipts(h.sim.sim, all, events))

            // Every event ended; the last of each channel, and the start, are done; the first
            // update of "other" was superseded by the second.
            let byChannel = Dictionary(grouping: events, by: \.channel)
            #expect(events.count == 8)
            #expect(events.allSatisfy { $0.state == "done" || $0.state == "superseded" }, "\(events.map(\.state))")
            for (_, list) in byChannel { #expect(list.last?.state == "done") }
            #expect(byChannel["side"]?.first?.kind == "start" && byChannel["side"]?.first?.state == "done")
            #expect(byChannel["other"]?.first?.state == "superseded")

            // Every live subscriber has the latest state of its channel, and every
            // push-to-start token the start.
            let final = snapshots.last!
            func missing(_ tokens: [String], _ e: StoredEvent?) -> Int {
                guard let e else { return tokens.count }
                let lacking = tokens.filter { (final[$0]?[e.id] ?? 0) == 0 }
                if let t = lacking.first {
                    print(
                        "kills: \(lacking.count) lack \(e.channel) \(e.kind) \(e.seq) \(e.id) \(String(decoding: e.payload, as: UTF8.self)); e.g. \(t) got \(final[t] ?? [:]): \(h.sim.sim.pushes(to: t).map { String(decoding: $0.payload, as: UTF8.self) })"
                    )
                }
                return lacking.count
            }
            #expect(missing(long, byChannel["long"]?.last) == 0)
            #expect(missing(other, byChannel["other"]?.last) == 0)
            #expect(missing(sideActivity, byChannel["side"]?.last) == 0)
            #expect(missing(sideStart, byChannel["side"]?.first) == 0)
            let allSet = Set(all)
            let strangers = final.keys.filter { !allSet.contains($0) }.count
            #expect(strangers == 0)
            let unknownPushes = final.values.filter { $0["unknown"] != nil }.count
            #expect(unknownPushes == 0)

            // Per token, never an older event after a newer one (duplicates repeat the same).
            #expect(Set(events.map(\.payload)).count == events.count)
            let seqOf = Dictionary(events.map { ($0.payload, $0.seq) }) { a, _ in a }
            var outOfOrder = 0
            for t in all {
                let seqs = h.sim.sim.pushes(to: t).compactMap { seqOf[$0.payload] }
                if zip(seqs, seqs.dropFirst()).contains(where: { $0 > $1 }) { outOfOrder += 1 }
            }
            #expect(outOfOrder == 0)

            // Duplicates: before the first kill, none. In each later life, an event reaches
            // again only tokens it had reached before if it was unfinished at the kill, and
            // at most `window` of them.
            let twiceBeforeAnyKill = snapshots[0].values.filter { $0.values.contains { $0 > 1 } }.count
            #expect(twiceBeforeAnyKill == 0)
            var totalDuplicates = 0
            var maxDuplicates = 0
            for life in 1..<snapshots.count {
                let (before, after) = (snapshots[life - 1], snapshots[life])
                let resumed = Dictionary(uniqueKeysWithValues: unfinishedAtKill[life - 1].map { ($0.id, $0) })
                var again: [String: Int] = [:]
                var insideCheckpoint = 0
                for (t, m) in after {
                    for (e, n) in m {
                        let had = before[t]?[e] ?? 0
                        let extra = n - had - (had == 0 ? 1 : 0)
                        guard extra > 0 else { continue }
                        again[e, default: 0] += extra
                        // Resent only past the committed checkpoint.
                        if resumed[e]?.checkpointCovers(t) == true { insideCheckpoint += 1 }
                    }
                }
                #expect(insideCheckpoint == 0, "life \(life): tokens before the checkpoint were sent again")
                for (e, n) in again {
                    totalDuplicates += n
                    maxDuplicates = max(maxDuplicates, n)
                    #expect(resumed[e] != nil, "event \(e) was finished at kill \(life) yet resent")
                    #expect(n <= window, "life \(life): \(n) tokens got event \(e) again (window \(window))")
                }
            }
            let pushes = h.sim.sim.stats().accepted
            print(
                "kills: \(pushes) pushes for \(all.count) subscriptions, \(totalDuplicates) resent after a kill, at most \(maxDuplicates) per event and kill (window \(window))"
            )
        }
    }
}
