import Dispatch
import HeraldCore
import Synchronization
import Testing

@testable import HeraldHTTPServer

@Suite struct ConnectionLimitTests {
    // Until issue 11 a connection beyond maxConnections waited in the listen queue until
    // one closed (aConnectionBeyondMaxConnectionsWaitsUntilOneCloses); idle connections
    // could so lock every client out. The contract now has the longest-idle one make room.
    @Test func aConnectionBeyondMaxConnectionsGetsInByClosingTheLongestIdleOne() throws {
        let server = try startServer(HTTPServerConfig(threads: 1, maxConnections: 2))
        defer { server.stop() }
        let a = try connect(server)
        let b = try connect(server)
        for c in [a, b] {
            try c.send(get("/"))
            #expect(try c.readResponse().status == 200)
        }
        #expect(server.stats.connections == 2)
        let third = try connect(server)
        try third.send(get("/third"))
        let r = try third.readResponse()
        #expect(r.json?["path"] == "/third")
        // a was idle longest: closed without a word; b is untouched.
        let (closed, received) = a.waitForClose(timeout: 5)
        #expect(closed && received.isEmpty)
        try b.send(get("/b"))
        #expect(try b.readResponse().json?["path"] == "/b")
        #expect(eventually { server.stats.connections == 2 })
        #expect(server.stats.reclaimedIdleTotal == 1)
        #expect(server.stats.refusedConnectionLimitTotal == 0)
        #expect(server.stats.abortedTotal == 0 && server.stats.rejectedTotal == 0)
    }

    @Test func aConnectionWhoseHandlerRunsIsNotReclaimed() throws {
        let handler = SlowPathHandler()
        let server = try startServer(HTTPServerConfig(threads: 2, maxConnections: 2), handler: handler)
        defer {
            handler.release(1)
            server.stop()
        }
        let slow = try connect(server)  // the oldest connection, its handler blocked
        try slow.send(get("/slow"))
        #expect(eventually { handler.entered.load(ordering: .relaxed) == 1 })
        let idle = try connect(server)
        #expect(eventually { server.stats.connections == 2 })

        let next = try connect(server)
        try next.send(get("/next"))
        #expect(try next.readResponse().json?["path"] == "/next")
        #expect(idle.waitForClose(timeout: 5).closed)
        #expect(server.stats.reclaimedIdleTotal == 1)
        handler.release(1)
        let r = try slow.readResponse()
        #expect(r.status == 200 && r.text == "finished")
    }

    @Test func aResponseBeingSentIsNotCutShortAndWithNoneIdleANewConnectionIsRefused() throws {
        let handler = SlowPathHandler()
        _ = SlowPathHandler.bigBody  // made now, not inside the first handler
        let server = try startServer(HTTPServerConfig(threads: 2, maxConnections: 2), handler: handler)
        defer { server.stop() }
        // 32 MiB that the client does not read yet: far more than both socket buffers hold,
        // so the server is still sending it.
        let first = try connect(server)
        try first.send(get("/big"))
        #expect(eventually { handler.entered.load(ordering: .relaxed) == 1 })
        let second = try connect(server)
        try second.send(get("/big"))
        #expect(eventually { handler.entered.load(ordering: .relaxed) == 2 })

        let refused = try connect(server)
        try? refused.send(get("/refused"))
        let (closed, received) = refused.waitForClose(timeout: 5)
        #expect(closed && received.isEmpty)
        #expect(server.stats.refusedConnectionLimitTotal == 1)
        #expect(server.stats.reclaimedIdleTotal == 0 && server.stats.reclaimedReadingRequestTotal == 0)

        for c in [first, second] {
            let r = try c.readResponse(timeout: 20)
            #expect(r.status == 200 && r.body.count == SlowPathHandler.bigBody.count)
            #expect(r.body == SlowPathHandler.bigBody)
        }
    }

    @Test func withNoneIdleAConnectionStillSendingItsRequestMakesRoom() throws {
        let server = try startServer(HTTPServerConfig(threads: 1, maxConnections: 1))
        defer { server.stop() }
        let stalled = try connect(server)
        try stalled.send("GET /stalled HTTP/1.1\r\nHost: te")
        // Read by the server (until then it is idle with a request waiting: passed over).
        #expect(eventually { server.core.book.withLock { $0.readingRequests } == 1 })
        let r = try roundTrip(server, get("/fresh"))
        #expect(r.json?["path"] == "/fresh")
        #expect(stalled.waitForClose(timeout: 5).closed)
        #expect(server.stats.reclaimedReadingRequestTotal == 1)
        // Counted as reclaimed, not as a request the client abandoned.
        #expect(eventually { server.stats.connections <= 1 })
        #expect(server.stats.abortedTotal == 0 && server.stats.rejectedTotal == 0)
    }

    @Test func aConnectionBeyondThePerIPLimitIsClosedAtOnce() throws {
        let server = try startServer(HTTPServerConfig(perIPConnectionLimit: 1))
        defer { server.stop() }
        let first = try connect(server)
        try first.send(get("/"))
        #expect(try first.readResponse().status == 200)
        let second = try connect(server)
        try? second.send(get("/"))
        let (closed, received) = second.waitForClose(timeout: 5)
        #expect(closed)
        #expect(received.isEmpty)
        // The first connection is unaffected.
        try first.send(get("/again"))
        #expect(try first.readResponse().status == 200)
        #expect(server.stats.refusedPerIPTotal == 1)
    }
}

/// Blocks requests for `/slow` until `release`; answers `/big` with `bigBody`; echoes the
/// rest. `entered` counts `/slow` and `/big` requests whose handler has begun.
final class SlowPathHandler: HTTPHandler {
    static let bigBody = [UInt8](repeating: UInt8(ascii: "b"), count: 32 << 20)
    let entered = Atomic<Int>(0)
    private let gate = DispatchSemaphore(value: 0)

    func handle(_ r: HTTPRequest) -> HTTPResponse {
        switch r.path {
        case "/slow":
            entered.add(1, ordering: .relaxed)
            _ = gate.wait(timeout: .now() + 10)
            return .text(200, "finished")
        case "/big":
            entered.add(1, ordering: .relaxed)
            return HTTPResponse(status: 200, headers: [("Content-Type", "application/octet-stream")], body: Self.bigBody)
        default:
            return EchoHandler().handle(r)
        }
    }

    func release(_ n: Int) { for _ in 0..<n { gate.signal() } }
}
