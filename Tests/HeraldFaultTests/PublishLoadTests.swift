import Foundation
import HeraldCore
import HeraldSQL
import HeraldSimulator
import HeraldTestSupport
import Testing

/// Issue #6, "Load", the CI-sized run (Benchmarks/soak.sh runs the same mix for minutes):
/// 200 publishers at once on 100 channels while a 10 000-subscriber channel is fanned out
/// over and over. No errors (429/503 only with Retry-After, then retried), every subscriber
/// ends with its channel's latest state, memory does not grow after warm-up, and the
/// publish → 202 latency is reported.
extension FaultTests {
    @Suite struct PublishLoad {
        static let clients = 200
        static let channels = 100
        static let subscribersPerChannel = 20
        static let bigSubscribers = 10_000

        /// What the publishers saw.
        final class Tally: @unchecked Sendable {
            // @unchecked: every member is guarded by `lock`.
            private let lock = NSLock()
            private(set) var latencies: [Double] = []
            private(set) var accepted = 0
            private(set) var pushedBack = 0
            private(set) var errors: [String] = []

            func record(_ body: (Tally) -> Void) {
                lock.lock()
                body(self)
                lock.unlock()
            }
            func add(latency: Double) {
                latencies.append(latency)
                accepted += 1
            }
            func addPushBack() { pushedBack += 1 }
            func add(error: String) { if errors.count < 20 { errors.append(error) } else { errors[19] = "… and more" } }
            /// What was recorded since the last call (errors are kept).
            func take() -> (latencies: [Double], accepted: Int, pushedBack: Int, errors: [String]) {
                lock.lock()
                defer { lock.unlock() }
                let r = (latencies, accepted, pushedBack, errors)
                latencies = []
                accepted = 0
                pushedBack = 0
                return r
            }
        }

        /// One publish as a well-behaved client does it: on 429/503 it waits `Retry-After`
        /// and tries again; anything else but 202 is an error. Returns when accepted or failed.
        static func publish(_ client: APIClient, token: String, channel: String, home: Int, away: Int, tally: Tally) {
            let body: JSON = ["aps": ["event": "update", "content-state": ["home": .int(Int64(home)), "away": .int(Int64(away))]]]
            for _ in 0..<50 {
                let start = Date()
                let r: APIResponse
                do {
                    r = try client.send("POST", "/v1/channels/\(channel)/events", token: token, json: body)
                } catch {
                    tally.record { $0.add(error: "\(channel): no answer: \(error)") }
                    return
                }
                let took = Date().timeIntervalSince(start)
                switch r.status {
                case 202:
                    tally.record { $0.add(latency: took) }
                    return
                case 429, 503:
                    guard let after = r.header("retry-after").flatMap(Double.init), r.errorCode != nil else {
                        tally.record { $0.add(error: "\(channel): \(r.status) without Retry-After or JSON error") }
                        return
                    }
                    tally.record { $0.addPushBack() }
                    Thread.sleep(forTimeInterval: after)  // the client honours Retry-After
                default:
                    tally.record { $0.add(error: "\(channel): \(r.status) \(r.text.prefix(200))") }
                    return
                }
            }
            tally.record { $0.add(error: "\(channel): still pushed back after 50 tries") }
        }

        /// `clients` threads, each publishing `rounds` updates to its channel; returns when all are done.
        static func round(_ h: ServedHerald, rounds: Int, offset: Int, tally: Tally) {
            let client = h.serve.client
            let token = h.serve.adminToken
            let group = DispatchGroup()
            for c in 0..<clients {
                group.enter()
                let t = Thread {
                    for n in 0..<rounds {
                        publish(client, token: token, channel: "load-\(c % channels)", home: c, away: offset + n, tally: tally)
                    }
                    group.leave()
                }
                t.stackSize = 256 << 10
                t.start()
            }
            group.wait()
        }

        @Test func twoHundredPublishersAtOnceWithoutErrorsOrGrowth() throws {
            let h = try ServedHerald {
                $0.maxConcurrentStreams = 200
                $0.faults.latency = 0.001
            }
            var all: [String: [String]] = [:]
            for i in 0..<Self.channels {
                let id = "load-\(i)"
                try h.channel(id)
                all[id] = makeTokens(Self.subscribersPerChannel, seed: 1_000 + UInt64(i))
                try h.subscribe(id, all[id]!)
            }
            try h.channel("big")
            all["big"] = makeTokens(Self.bigSubscribers, seed: 999)
            try h.subscribe("big", all["big"]!)

            // A big fan-out running under the whole load: a new update every 300 ms.
            let stop = DispatchSemaphore(value: 0)
            let bigDone = DispatchSemaphore(value: 0)
            let bigTally = Tally()
            let client = h.serve.client
            let token = h.serve.adminToken
            Thread {
                var n = 0
                while stop.wait(timeout: .now() + 0.3) == .timedOut {
                    n += 1
                    Self.publish(client, token: token, channel: "big", home: n, away: 0, tally: bigTally)
                }
                bigDone.signal()
            }.start()

            let tally = Tally()
            // Warm-up: every client publishes, every channel and code path runs once.
            Self.round(h, rounds: 10, offset: 0, tally: tally)
            let warm = try #require(h.serve.memory)
            let dbWarm = Self.databaseBytes(h.db)
            let sqliteWarm = try h.serve.metrics().sum("herald_db_memory_peak_bytes")
            let warmUp = tally.take()
            // The measured load, in two halves.
            let t0 = Date()
            Self.round(h, rounds: 20, offset: 100, tally: tally)
            let mid = try #require(h.serve.memory)
            let sqliteMid = try h.serve.metrics().sum("herald_db_memory_peak_bytes")
            Self.round(h, rounds: 20, offset: 200, tally: tally)

            let seconds = Date().timeIntervalSince(t0)
            stop.signal()
            bigDone.wait()
            let (latencies, accepted, pushedBack, errors) = tally.take()

            // Everything sent: each channel's last event ends, and every subscriber's latest
            // push is it.
            var stale = 0
            for (id, tokens) in all {
                let last = try #require(try h.serve.send("GET", "/v1/channels/\(id)").json?["last_event"])
                let eventID = try #require(last["event_id"]?.stringValue)
                let e = try h.serve.waitEvent(id, eventID, timeout: 120)
                #expect(e?["state"]?.stringValue == "done", "\(id): \(e?["state"]?.stringValue ?? "not ended")")
                let reference = h.sim.sim.pushes(to: tokens[0]).last
                #expect(reference?.timestamp == last["aps_timestamp"]?.intValue)
                stale += tokens.filter { h.sim.sim.pushes(to: $0).last?.payload != reference?.payload }.count
            }
            let end = try #require(h.serve.memory)
            let dbEnd = Self.databaseBytes(h.db)
            let sqliteEnd = try h.serve.metrics().sum("herald_db_memory_peak_bytes")
            let p = Percentiles(latencies)
            let mib = { (b: Int) in String(format: "%.1f MiB", Double(b) / 1_048_576) }
            print(
                "load: \(accepted) publishes by \(Self.clients) clients in \(String(format: "%.1f", seconds)) s (\(Int(Double(accepted) / seconds))/s), publish→202 \(p)"
            )
            print(
                "load: \(warmUp.accepted) publishes to warm up; pushed back \(pushedBack) times (retried after Retry-After), \(errors.count) errors, \(h.sim.sim.stats().accepted) pushes delivered"
            )
            print(
                "load: RssAnon warm \(mib(warm.anon)), mid \(mib(mid.anon)), end \(mib(end.anon)); VmRSS warm \(mib(warm.rss)), end \(mib(end.rss)); database \(mib(dbWarm)) → \(mib(dbEnd))"
            )

            #expect(errors.isEmpty, "\(errors)")
            #expect(bigTally.take().errors.isEmpty)
            #expect(accepted == Self.clients * 40)
            #expect(stale == 0, "\(stale) subscribers lack their channel's latest state")
            // Memory: after the warm-up every connection, thread, channel and queue exists
            // (the queues are bounded: the APNs pool at 8 000 requests, 10 000 for the express
            // lane of small events, the database writer at 10 000 jobs). What still grows is
            // SQLite's heap: its page caches fill as the database grows (the writer's up to
            // 32 MiB, each reader's up to 8 MiB), which /metrics reports
            // (herald_db_memory_peak_bytes: the most it held, since glibc keeps what SQLite
            // frees). The rest still settles after the warm-up: queues, MHD buffers and
            // glibc's per-thread arenas reach higher marks for some 20 000 publishes
            // (Benchmarks/soak.sh prints the heap less SQLite's: +4.7 MiB over the first
            // 12 000 publishes after its warm-up, then +0.5 MiB per 10 000, levelling off), so
            // the first half of the measured load (4 000 publishes) counts as warm-up too (a
            // loaded CI run: +5.0 MiB in the first half, +3.4 MiB in the second, SQLite's
            // peak +2.3 MiB over both; a quiet one: +3.0 and +2.4). Over the second half the
            // heap may grow by SQLite's growth (+10% for malloc's headers) plus 4 MiB: a
            // coarse guard, against leaks of more than ~1 KiB per publish (a leak grows in
            // both halves alike, settling does not); smaller ones are caught exactly
            // elsewhere (live request counts, e.g. SupersededBatchTests, and LeakSanitizer in
            // scripts/sanitizers).
            // Reintroducing the superseded-batch leak now adds only ~1.8 MiB here (the
            // express lane leaves few batches waiting for room): SupersededBatchTests fails.
            print("load: SQLite heap peak \(mib(Int(sqliteWarm))) → \(mib(Int(sqliteMid))) → \(mib(Int(sqliteEnd)))")
            #expect(sqliteEnd > 0, "herald_db_memory_peak_bytes is missing or zero")
            let allowed = Int((sqliteEnd - sqliteMid) * 1.1) + 4 * (1 << 20)
            #expect(end.anon - mid.anon <= allowed, "RssAnon grew \(mib(end.anon - mid.anon)) in the second half, allowed \(mib(allowed))")
        }

        /// The database's size in pages × page size, as a reader sees it (the WAL's committed
        /// pages included). Not the files' sizes: the WAL file keeps its size after a
        /// checkpoint and is refilled from its start, so pages written into it did not show
        /// until the next checkpoint (every 8 000 pages) grew the main file.
        static func databaseBytes(_ path: String) -> Int {
            guard let c = try? SQLiteConnection(path: path, readOnly: true) else { return 0 }
            defer { c.close() }
            let pages = (try? c.queryValue("PRAGMA page_count"))??.intValue ?? 0
            let size = (try? c.queryValue("PRAGMA page_size"))??.intValue ?? 0
            return pages * size
        }
    }
}
