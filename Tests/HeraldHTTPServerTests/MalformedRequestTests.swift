import HeraldCore
import HeraldHTTPServer
import Testing

/// What libmicrohttpd 0.9.75 answers by itself. Its error bodies are small HTML pages
/// without a content type (compiled in with HAVE_MESSAGES on Debian); the tests pin status
/// codes and that the server goes on serving, not the page text.
@Suite struct MalformedRequestTests {
    @Test func headerLineWithoutColonGets400AndTheServerKeepsServing() throws {
        let logs = LogCapture()
        let server = try startServer(logger: logs.logger)
        defer { server.stop() }
        let c = try connect(server)
        try c.send("GET / HTTP/1.1\r\nHost: test\r\nThis line has no colon\r\n\r\n")
        let r = try c.readResponse()
        #expect(r.status == 400)
        #expect(c.waitForClose(timeout: 5).closed)
        #expect(try roundTrip(server, get("/still-here")).status == 200)
        #expect(server.stats.rejectedTotal == 1)
        let line = try #require(logs.events("http.request_rejected").first)
        #expect(line["answered_by"] == "libmicrohttpd")
    }

    @Test func unknownHTTPVersionGets505() throws {
        let server = try startServer()
        defer { server.stop() }
        #expect(try roundTrip(server, "GET / HTTP/2.0\r\nHost: test\r\n\r\n").status == 505)
        #expect(try roundTrip(server, "GET / HTTX/1.1\r\nHost: test\r\n\r\n").status == 400)
    }

    @Test func malformedContentLengthGets400() throws {
        let server = try startServer()
        defer { server.stop() }
        #expect(try roundTrip(server, "POST / HTTP/1.1\r\nHost: test\r\nContent-Length: 12abc\r\n\r\n").status == 400)
    }

    @Test func malformedChunkGets400() throws {
        let server = try startServer()
        defer { server.stop() }
        let r = try roundTrip(
            server, "POST / HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n")
        #expect(r.status == 400)
    }

    @Test func headersLargerThanTheMemoryLimitGet431() throws {
        let server = try startServer(HTTPServerConfig(connectionMemoryLimit: 8192))
        defer { server.stop() }
        let big = String(repeating: "x", count: 16_000)
        let c = try connect(server)
        try? c.send("GET / HTTP/1.1\r\nHost: test\r\nX-Big: \(big)\r\n\r\n")
        #expect(try c.readResponse().status == 431)
        #expect(try roundTrip(server, get("/")).status == 200)
    }

    @Test func requestLineWithoutSpacesIsClosedUnansweredAndTheServerKeepsServing() throws {
        let server = try startServer()
        defer { server.stop() }
        let c = try connect(server)
        try c.send("NONSENSE\r\n\r\n")
        let (closed, received) = c.waitForClose(timeout: 5)
        #expect(closed)
        #expect(received.isEmpty)
        #expect(try roundTrip(server, get("/")).status == 200)
    }
}
