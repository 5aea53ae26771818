import HeraldCore
import HeraldHTTPServer
import Testing

@Suite struct KeepAliveTests {
    @Test func severalRequestsShareOneConnection() throws {
        let server = try startServer()
        defer { server.stop() }
        let c = try connect(server)
        for i in 0..<5 {
            try c.send(get("/n/\(i)"))
            let r = try c.readResponse()
            #expect(r.status == 200)
            #expect(r.json?["path"] == .string("/n/\(i)"))
        }
        try c.send(post("/echo", body: Array("last".utf8)))
        #expect(try c.readResponse().text == "last")
        #expect(server.stats.connections == 1)
        #expect(server.stats.requestsTotal == 6)
    }

    @Test func pipelinedRequestsAreAnsweredInOrder() throws {
        let server = try startServer()
        defer { server.stop() }
        let c = try connect(server)
        try c.send(get("/first") + get("/second") + get("/third"))
        for path in ["/first", "/second", "/third"] {
            #expect(try c.readResponse().json?["path"] == .string(path))
        }
    }

    @Test func connectionCloseFromTheClientIsHonoured() throws {
        let server = try startServer()
        defer { server.stop() }
        let c = try connect(server)
        try c.send(get("/bye", extraHeaders: "Connection: close\r\n"))
        #expect(try c.readResponse().status == 200)
        #expect(c.waitForClose(timeout: 5).closed)
    }
}
