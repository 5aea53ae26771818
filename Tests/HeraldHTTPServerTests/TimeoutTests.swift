import HeraldCore
import HeraldHTTPServer
import Testing

@Suite struct TimeoutTests {
    @Test func clientStallingMidRequestLineIsDroppedAfterTheTimeoutWhileOthersAreServed() throws {
        let server = try startServer(HTTPServerConfig(threads: 1, connectionTimeoutSeconds: 1))
        defer { server.stop() }
        let slow = try connect(server)
        let started = ContinuousClock.now
        try slow.send("GET /sl")
        // Served meanwhile, even on a single worker thread.
        #expect(try roundTrip(server, get("/fast")).status == 200)
        let (closed, received) = slow.waitForClose(timeout: 5)
        let waited = ContinuousClock.now - started
        #expect(closed)
        #expect(received.isEmpty)
        #expect(waited >= .milliseconds(900))
        #expect(waited < .seconds(5))
    }

    @Test func clientStallingMidHeadersIsDroppedAndCountedAsAborted() throws {
        let logs = LogCapture()
        let server = try startServer(HTTPServerConfig(connectionTimeoutSeconds: 1), logger: logs.logger)
        defer { server.stop() }
        let slow = try connect(server)
        try slow.send("GET /slow HTTP/1.1\r\nHost: te")
        #expect(slow.waitForClose(timeout: 5).closed)
        #expect(eventually { server.stats.abortedTotal == 1 })
        let line = try #require(logs.events("http.request_aborted").first)
        #expect(line["reason"] == "timeout")
        #expect(line["level"] == "debug")
    }

    @Test func idleKeepAliveConnectionIsClosedAfterTheTimeout() throws {
        let server = try startServer(HTTPServerConfig(connectionTimeoutSeconds: 1))
        defer { server.stop() }
        let c = try connect(server)
        try c.send(get("/"))
        #expect(try c.readResponse().status == 200)
        #expect(c.waitForClose(timeout: 5).closed)
        #expect(eventually { server.stats.connections == 0 })
    }
}
