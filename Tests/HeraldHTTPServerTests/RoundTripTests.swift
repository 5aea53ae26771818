import HeraldCore
import HeraldHTTPServer
import Testing

@Suite struct RoundTripTests {
    @Test func getIsAnsweredWithTheHandlersJSONAndAContentLength() throws {
        let server = try startServer()
        defer { server.stop() }
        let r = try roundTrip(server, get("/v1/things"))
        #expect(r.status == 200)
        #expect(r.headers["content-type"] == "application/json")
        #expect(r.headers["content-length"] == String(r.body.count))
        let json = try #require(r.json)
        #expect(json["method"] == "GET")
        #expect(json["path"] == "/v1/things")
        #expect(json["remote"] == "127.0.0.1")
        #expect(json["bodyLength"] == 0)
    }

    @Test func postBodyComesBackByteForByte() throws {
        let server = try startServer()
        defer { server.stop() }
        // Every byte value, and more than one read's worth so the body arrives in pieces.
        let body = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let c = try connect(server)
        try c.send(post("/echo", body: body))
        let r = try c.readResponse()
        #expect(r.status == 200)
        #expect(r.headers["x-method"] == "POST")
        #expect(r.body == body)
    }

    @Test func headerNamesAreLowerCasedAndRepeatedHeadersJoined() throws {
        let server = try startServer()
        defer { server.stop() }
        let r = try roundTrip(
            server, get("/h", extraHeaders: "X-Custom-THING: Value One\r\nX-Repeat: 1\r\nx-repeat: 2\r\n"))
        let headers = try #require(r.json?["headers"]?.objectValue)
        #expect(headers["x-custom-thing"] == "Value One")
        #expect(headers["x-repeat"] == "1, 2")
        #expect(headers["host"] == "test")
        #expect(headers.keys.allSatisfy { $0 == $0.lowercased() })
    }

    @Test func queryIsDecodedAndTheRawQueryKept() throws {
        let server = try startServer()
        defer { server.stop() }
        let raw = "a=1&b=hello%20world&c=x+y&flag&a=2"
        let json = try #require(try roundTrip(server, get("/q?\(raw)")).json)
        #expect(json["path"] == "/q")
        #expect(json["rawQuery"] == .string(raw))
        #expect(json["query"] == ["a": "1", "b": "hello world", "c": "x y", "flag": ""])
    }

    @Test func pathIsPercentDecodedWhileRawPathIsNot() throws {
        let server = try startServer()
        defer { server.stop() }
        let json = try #require(try roundTrip(server, get("/v1/a%2Fb/caf%C3%A9")).json)
        #expect(json["path"] == "/v1/a/b/café")
        #expect(json["rawPath"] == "/v1/a%2Fb/caf%C3%A9")
    }

    @Test func headGetsTheHeadersOfGetWithoutABody() throws {
        let server = try startServer(handler: HTTPHandlerFunction { r in .text(200, "body of \(r.path)") })
        defer { server.stop() }
        let c = try connect(server)
        try c.send("HEAD /x HTTP/1.1\r\nHost: test\r\n\r\n")
        let head = try c.readResponse(head: true)
        #expect(head.status == 200)
        #expect(head.headers["content-length"] == "10")  // "body of /x"
        // Had a body followed the HEAD response, it would now be read as a status line.
        try c.send(get("/after"))
        #expect(try c.readResponse().text == "body of /after")
    }

    @Test func aResponseWithAnInvalidHeaderBecomesA500JSONError() throws {
        let logs = LogCapture()
        let server = try startServer(
            logger: logs.logger,
            handler: HTTPHandlerFunction { _ in HTTPResponse(status: 200, headers: [("X-Bad", "a\r\nInjected: 1")]) })
        defer { server.stop() }
        let r = try roundTrip(server, get("/"))
        #expect(r.status == 500)
        #expect(r.errorCode == "internal_error")
        #expect(r.headers["injected"] == nil)
        #expect(logs.events("http.response_invalid").count == 1)
    }

    @Test func anOutOfRangeStatusBecomesA500JSONError() throws {
        let server = try startServer(handler: HTTPHandlerFunction { _ in .empty(42) })
        defer { server.stop() }
        let r = try roundTrip(server, get("/"))
        #expect(r.status == 500)
        #expect(r.headers["content-type"] == "application/json")
    }

    @Test func successfulRequestsAreNotLogged() throws {
        let logs = LogCapture()
        let server = try startServer(logger: logs.logger)
        defer { server.stop() }
        for i in 0..<3 { _ = try roundTrip(server, get("/ok\(i)")) }
        #expect(logs.all.map { $0["event"]?.stringValue } == ["http.listening"])
    }
}
