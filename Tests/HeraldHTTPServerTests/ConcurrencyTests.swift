import Dispatch
import HeraldCore
import HeraldHTTPServer
import Synchronization
import Testing

@Suite struct ConcurrencyTests {
    @Test func requestsFromManyThreadsAreAllAnsweredWithTheirOwnBodies() throws {
        let server = try startServer(HTTPServerConfig(threads: 4))
        defer { server.stop() }
        let clients = 8
        let perClient = 25
        let failures = Locked<[String]>([])
        onSeparateThreads(clients) { client in
            do {
                let c = try connect(server)
                for i in 0..<perClient {
                    let body =
                        Array("client \(client) request \(i) ".utf8) + [UInt8](repeating: UInt8(client), count: i * 100)
                    try c.send(post("/echo", body: body))
                    let r = try c.readResponse()
                    if r.status != 200 || r.body != body {
                        failures.withLock { $0.append("client \(client) request \(i): status \(r.status)") }
                    }
                }
            } catch {
                failures.withLock { $0.append("client \(client): \(error)") }
            }
        }
        #expect(failures.withLock { $0 } == [])
        #expect(server.stats.requestsTotal == UInt64(clients * perClient))
    }

    @Test func blockingHandlersOnDifferentWorkersRunAtTheSameTime() throws {
        // Each handler waits until both have started: with one worker per connection this
        // completes; were handlers serialised it would time out.
        let arrived = Atomic<Int>(0)
        let handler = HTTPHandlerFunction { _ in
            arrived.add(1, ordering: .relaxed)
            let together = eventually(timeout: 5) { arrived.load(ordering: .relaxed) >= 2 }
            return .text(together ? 200 : 504, together ? "together" : "alone")
        }
        let server = try startServer(HTTPServerConfig(threads: 2, maxConnections: 2), handler: handler)
        defer { server.stop() }
        let statuses = Locked<[Int]>([])
        onSeparateThreads(2) { client in
            // The second connects once the first handler runs: its worker, blocked, cannot
            // accept, so the other worker takes it. (Connecting both at once, one worker may
            // accept both: the connection cap no longer spreads them over the workers, which
            // it did only when it left one connection per worker.)
            if client == 1 { _ = eventually(timeout: 5) { arrived.load(ordering: .relaxed) >= 1 } }
            let status = (try? roundTrip(server, get("/block")).status) ?? 0
            statuses.withLock { $0.append(status) }
        }
        #expect(statuses.withLock { $0 } == [200, 200])
    }
}
