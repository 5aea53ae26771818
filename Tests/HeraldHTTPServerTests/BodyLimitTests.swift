import HeraldCore
import HeraldHTTPServer
import Synchronization
import Testing

/// Counts handler calls, to show refused requests never reach it.
final class CountingHandler: HTTPHandler {
    let calls = Atomic<Int>(0)
    func handle(_ r: HTTPRequest) -> HTTPResponse {
        calls.add(1, ordering: .relaxed)
        return HTTPResponse(status: 200, body: r.body)
    }
}

@Suite struct BodyLimitTests {
    let limit = 1024

    @Test func contentLengthOverTheLimitGets413JSONWithoutSendingTheBodyAndTheConnectionCloses() throws {
        let logs = LogCapture()
        let handler = CountingHandler()
        let server = try startServer(HTTPServerConfig(maxBodyBytes: limit), logger: logs.logger, handler: handler)
        defer { server.stop() }
        let c = try connect(server)
        // Headers only: the body is never sent, so the answer must not wait for it.
        try c.send("POST /upload HTTP/1.1\r\nHost: test\r\nContent-Length: \(limit + 1)\r\n\r\n")
        let r = try c.readResponse()
        #expect(r.status == 413)
        #expect(r.headers["content-type"] == "application/json")
        #expect(r.errorCode == "request_too_large")
        #expect(c.waitForClose(timeout: 5).closed)
        #expect(handler.calls.load(ordering: .relaxed) == 0)
        #expect(server.stats.rejectedTotal == 1)
        let rejected = logs.events("http.request_rejected")
        #expect(rejected.count == 1)
        #expect(rejected.first?["level"] == "warning")
        #expect(rejected.first?["status"] == 413)
    }

    @Test func expectContinueOverTheLimitGets413InsteadOf100() throws {
        let server = try startServer(HTTPServerConfig(maxBodyBytes: limit))
        defer { server.stop() }
        let c = try connect(server)
        try c.send(
            "PUT /x HTTP/1.1\r\nHost: test\r\nContent-Length: 5000000\r\nExpect: 100-continue\r\n\r\n")
        #expect(try c.readResponse().status == 413)
    }

    @Test func bodyExactlyAtTheLimitIsAccepted() throws {
        let server = try startServer(HTTPServerConfig(maxBodyBytes: limit))
        defer { server.stop() }
        let body = [UInt8](repeating: 7, count: limit)
        let c = try connect(server)
        try c.send(post("/echo", body: body))
        let r = try c.readResponse()
        #expect(r.status == 200)
        #expect(r.body == body)
    }

    @Test func chunkedBodyUnderTheLimitReachesTheHandlerWhole() throws {
        let server = try startServer(HTTPServerConfig(maxBodyBytes: limit))
        defer { server.stop() }
        let body = (0..<1000).map { UInt8(truncatingIfNeeded: $0) }
        let c = try connect(server)
        try c.send("POST /echo HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n")
        try c.send(chunked(body, chunk: 300))
        let r = try c.readResponse()
        #expect(r.status == 200)
        #expect(r.body == body)
    }

    @Test func chunkedBodyCrossingTheLimitGets413JSONAndTheConnectionStaysUsable() throws {
        let handler = CountingHandler()
        let server = try startServer(HTTPServerConfig(maxBodyBytes: limit), handler: handler)
        defer { server.stop() }
        let c = try connect(server)
        try c.send("POST /upload HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n")
        try c.send(chunked([UInt8](repeating: 1, count: limit * 3), chunk: 512))
        let r = try c.readResponse()
        #expect(r.status == 413)
        #expect(r.errorCode == "request_too_large")
        #expect(handler.calls.load(ordering: .relaxed) == 0)
        // The whole body was consumed, so the connection is still in step.
        try c.send(post("/next", body: [1, 2, 3]))
        let next = try c.readResponse()
        #expect(next.status == 200)
        #expect(next.body == [1, 2, 3])
        #expect(server.stats.rejectedTotal == 1)
    }

    @Test func chunkedBodyThatNeverStopsIsCutOffWithoutBuffering() throws {
        let logs = LogCapture()
        let server = try startServer(HTTPServerConfig(maxBodyBytes: limit), logger: logs.logger)
        defer { server.stop() }
        let c = try connect(server)
        try c.send("POST /upload HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n")
        // Past the limit plus the discard allowance (1 MiB): the server stops reading.
        let chunk = Array("10000\r\n".utf8) + [UInt8](repeating: 2, count: 0x10000) + [13, 10]
        var sendFailed = false
        for _ in 0..<64 where !sendFailed {
            do { try c.send(chunk) } catch { sendFailed = true }
        }
        #expect(c.waitForClose(timeout: 5).closed)
        #expect(logs.events("http.request_rejected").count == 1)
        #expect(server.stats.rejectedTotal == 1)
    }

    @Test func transferCodingOtherThanChunkedIsRefusedWith501() throws {
        let server = try startServer()
        defer { server.stop() }
        let r = try roundTrip(server, "POST /x HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: gzip\r\n\r\n")
        #expect(r.status == 501)
        #expect(r.errorCode == "unsupported_transfer_encoding")
    }

    @Test func encodedNulInThePathIsRefusedWith400() throws {
        let handler = CountingHandler()
        let server = try startServer(handler: handler)
        defer { server.stop() }
        let r = try roundTrip(server, get("/v1/a%00b"))
        #expect(r.status == 400)
        #expect(r.errorCode == "invalid_path")
        #expect(handler.calls.load(ordering: .relaxed) == 0)
    }
}
