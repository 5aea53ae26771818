import HeraldCore
import HeraldHTTPServer
import Testing

@Suite struct ConnectionLimitTests {
    @Test func aConnectionBeyondMaxConnectionsWaitsUntilOneCloses() throws {
        let server = try startServer(HTTPServerConfig(threads: 1, maxConnections: 2))
        defer { server.stop() }
        let a = try connect(server)
        let b = try connect(server)
        for c in [a, b] {
            try c.send(get("/"))
            #expect(try c.readResponse().status == 200)
        }
        #expect(server.stats.connections == 2)
        // The kernel completes the handshake, but the server does not accept the third.
        let third = try connect(server)
        try third.send(get("/third"))
        #expect(third.staysSilent(for: 0.3))
        #expect(server.stats.connections == 2)
        a.close()
        let r = try third.readResponse()
        #expect(r.json?["path"] == "/third")
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
    }
}
