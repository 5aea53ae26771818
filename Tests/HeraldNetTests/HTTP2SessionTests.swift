import Testing

@testable import HeraldNet

/// A client and a server `HTTP2Session` wired back to back in memory, as nghttp2's own
/// tests do: no socket, no TLS, no loop. `pump` moves bytes both ways until both are quiet.
struct SessionPair {
    let client: HTTP2Session
    let server: HTTP2Session
    var clientEvents: [HTTP2Event] = []
    var serverEvents: [HTTP2Event] = []

    init(serverSettings: [HTTP2Setting] = [.maxConcurrentStreams(1000)], serverWindow: Int32? = nil) throws {
        client = try HTTP2Session(
            role: .client, settings: [.enablePush(false), .initialWindowSize(1 << 24)], connectionWindow: 1 << 24,
            maxBodyBytes: 64 * 1024)
        server = try HTTP2Session(role: .server, settings: serverSettings, connectionWindow: serverWindow, maxBodyBytes: 64 * 1024)
    }

    /// Exchanges bytes until neither side has anything to send. Returns the round trips.
    @discardableResult
    mutating func pump(maxRounds: Int = 10_000) throws -> Int {
        for round in 0..<maxRounds {
            let c = try client.produce()
            clientEvents += c.events
            if !c.bytes.isEmpty { serverEvents += try server.receive(c.bytes) }
            let s = try server.produce()
            serverEvents += s.events
            if !s.bytes.isEmpty { clientEvents += try client.receive(s.bytes) }
            if c.bytes.isEmpty && s.bytes.isEmpty { return round }
        }
        Issue.record("the sessions never went quiet")
        return maxRounds
    }

    func post(_ path: String, body: [UInt8] = Array(repeating: 0x61, count: 300)) throws -> HTTP2StreamID {
        let auth: StaticString = "api.example"
        return try client.submitRequest(
            HTTP2Request(method: "POST", path: path, body: HTTP2Body(body)),
            authority: UnsafeBufferPointer(start: auth.utf8Start, count: auth.utf8CodeUnitCount), extra: nil, idField: nil)
    }

    /// Requests the server saw, and takes them out.
    mutating func takeRequests() -> [HTTP2ServerRequest] {
        var out: [HTTP2ServerRequest] = []
        serverEvents.removeAll { e in
            if case .request(let r) = e {
                out.append(r)
                return true
            }
            return false
        }
        return out
    }

    var responses: [HTTP2StreamID: HTTP2Response] {
        var out: [HTTP2StreamID: HTTP2Response] = [:]
        for case .response(let id, let r, _) in clientEvents { out[id] = r }
        return out
    }

    var clientClosed: [HTTP2StreamID: UInt32] {
        var out: [HTTP2StreamID: UInt32] = [:]
        for case .streamClosed(let id, let code, _) in clientEvents { out[id] = code }
        return out
    }

    var clientSettings: [Int] {
        clientEvents.compactMap { if case .settings(let m, _) = $0 { m } else { nil } }
    }
}

@Suite struct HTTP2SessionTests {
    @Test func aRequestAndItsResponseCrossInMemory() throws {
        var p = try SessionPair()
        let id = try p.post("/3/device/abc", body: Array("{\"aps\":{}}".utf8))
        try p.pump()
        let reqs = p.takeRequests()
        #expect(reqs.count == 1)
        #expect(reqs.first?.path == "/3/device/abc")
        #expect(reqs.first?.method == "POST")
        #expect(reqs.first?.authority == "api.example")
        #expect(reqs.first?.scheme == "https")
        #expect(reqs.first?.body == Array("{\"aps\":{}}".utf8))
        var h = HeaderList()
        h.append("apns-id", "x")
        try p.server.submitResponse(streamID: reqs[0].streamID, status: 410, headers: h, body: Array("{}".utf8))
        try p.pump()
        let r = try #require(p.responses[id])
        #expect(r.status == 410)
        #expect(r.header("apns-id") == "x")
        #expect(r.body == Array("{}".utf8))
        #expect(p.client.openStreams == 0)
        #expect(p.server.openStreams == 0)
    }

    @Test func thousandBodiesOf300BytesCrossA64KiBWindow() throws {
        // 300 kB of bodies against the default 65,535-byte windows: nghttp2 offers the
        // body callback less than the rest, and WINDOW_UPDATEs must flow (interop §8).
        var p = try SessionPair(serverSettings: [.maxConcurrentStreams(1000)], serverWindow: nil)
        #expect(p.server.peerInitialWindowSize == 65_535)
        var ids: [HTTP2StreamID] = []
        for i in 0..<1000 { ids.append(try p.post("/3/device/\(i)")) }
        try p.pump()
        let reqs = p.takeRequests()
        #expect(reqs.count == 1000)
        #expect(reqs.allSatisfy { $0.body.count == 300 && $0.bodySize == 300 })
        for r in reqs { try p.server.submitResponse(streamID: r.streamID, status: 200, headers: HeaderList(), body: []) }
        try p.pump()
        #expect(p.responses.count == 1000)
        #expect(Set(p.responses.keys) == Set(ids))
    }

    @Test func settingsLoweredMidFlightApplyToTheNextStreams() throws {
        var p = try SessionPair()
        try p.pump()
        #expect(p.client.peerMaxConcurrentStreams == 1000)
        for i in 0..<3 { _ = try p.post("/a/\(i)") }
        try p.pump()
        var open = p.takeRequests()
        #expect(open.count == 3)
        // Lower to 1 while three streams are open: they finish, new ones wait their turn.
        try p.server.submitSettings([.maxConcurrentStreams(1)])
        try p.pump()
        #expect(p.client.peerMaxConcurrentStreams == 1)
        #expect(p.clientSettings.last == 1)
        for i in 0..<4 { _ = try p.post("/b/\(i)") }
        try p.pump()
        #expect(p.takeRequests().isEmpty, "three streams are open and the limit is 1")
        var served = 0
        while !open.isEmpty || served == 0 {
            for r in open { try p.server.submitResponse(streamID: r.streamID, status: 200, headers: HeaderList(), body: []) }
            try p.pump()
            open = p.takeRequests()
            #expect(open.count <= 1, "the lowered limit holds")
            served += open.count
        }
        #expect(served == 4)
        #expect(p.responses.count == 7)
    }

    @Test func aPeerThatStartsAtOneStreamRefusesWhatCameBeforeItsSettings() throws {
        // Before the server's SETTINGS arrive, the client assumes 100 streams (why the pool
        // opens a connection at one stream, reference §1.3): the server refuses the rest.
        var p = try SessionPair(serverSettings: [.maxConcurrentStreams(1)])
        let early = try (0..<3).map { try p.post("/early/\($0)") }
        try p.pump()
        #expect(p.takeRequests().map(\.streamID) == [early[0]])
        #expect(p.clientClosed == [early[1]: HTTP2ErrorCode.refusedStream, early[2]: HTTP2ErrorCode.refusedStream])
    }

    @Test func aPeerAtOneStreamGetsThemOneByOneOnceItsSettingsArrived() throws {
        var p = try SessionPair(serverSettings: [.maxConcurrentStreams(1)])
        try p.pump()
        #expect(p.client.peerMaxConcurrentStreams == 1)
        for i in 0..<5 { _ = try p.post("/one/\(i)") }
        var seen: [String] = []
        try p.pump()
        while true {
            let reqs = p.takeRequests()
            #expect(reqs.count <= 1)
            guard let r = reqs.first else { break }
            seen.append(r.path)
            try p.server.submitResponse(streamID: r.streamID, status: 200, headers: HeaderList(), body: [])
            try p.pump()
        }
        #expect(seen == (0..<5).map { "/one/\($0)" })
        #expect(p.clientClosed.isEmpty)
    }

    @Test func goAwayRefusesOnlyStreamsAboveLastStreamID() throws {
        var p = try SessionPair()
        let ids = try (0..<5).map { try p.post("/g/\($0)") }
        #expect(ids == [1, 3, 5, 7, 9])
        try p.pump()
        let reqs = p.takeRequests()
        #expect(reqs.count == 5)
        try p.server.submitGoAway(lastStreamID: 5, errorCode: 0, debugData: Array("{\"reason\":\"Shutdown\"}".utf8))
        try p.pump()
        let goAway = p.clientEvents.compactMap { e -> (HTTP2StreamID, [UInt8])? in
            if case .goAway(let last, _, let data) = e { (last, data) } else { nil }
        }
        #expect(goAway.count == 1)
        #expect(goAway.first?.0 == 5)
        #expect(goAway.first?.1 == Array("{\"reason\":\"Shutdown\"}".utf8))
        #expect(p.clientClosed == [7: HTTP2ErrorCode.refusedStream, 9: HTTP2ErrorCode.refusedStream])
        // Streams at or below last-stream-id still get their answers.
        for r in reqs where r.streamID <= 5 {
            try p.server.submitResponse(streamID: r.streamID, status: 200, headers: HeaderList(), body: [])
        }
        try p.pump()
        #expect(Set(p.responses.keys) == [1, 3, 5])
        // A stream submitted after GOAWAY never starts: nghttp2 closes it as refused.
        let late = try p.post("/late")
        try p.pump()
        #expect(p.takeRequests().isEmpty)
        #expect(p.clientClosed[late] == HTTP2ErrorCode.refusedStream)
    }

    @Test func rstStreamEndsOneStreamWithItsCode() throws {
        var p = try SessionPair()
        let a = try p.post("/r/a")
        let b = try p.post("/r/b")
        try p.pump()
        #expect(p.takeRequests().count == 2)
        try p.server.submitReset(streamID: b, errorCode: HTTP2ErrorCode.internalError)
        try p.server.submitResponse(streamID: a, status: 200, headers: HeaderList(), body: [])
        try p.pump()
        #expect(p.clientClosed == [b: HTTP2ErrorCode.internalError])
        #expect(p.responses[a]?.status == 200)
        // The client cancels a stream: the server sees it close with CANCEL.
        let c = try p.post("/r/c")
        try p.pump()
        _ = p.takeRequests()
        try p.client.submitReset(streamID: c, errorCode: HTTP2ErrorCode.cancel)
        try p.pump()
        let closedOnServer = p.serverEvents.compactMap { e -> UInt32? in
            if case .streamClosed(let id, let code, _) = e, id == c { code } else { nil }
        }
        #expect(closedOnServer == [HTTP2ErrorCode.cancel])
        #expect(p.clientClosed[c] == HTTP2ErrorCode.cancel)
    }

    @Test func pingIsAcknowledged() throws {
        var p = try SessionPair()
        try p.client.submitPing()
        try p.pump()
        #expect(p.clientEvents.contains { if case .pingAcknowledged = $0 { true } else { false } })
    }

    @Test func terminatedSessionsFinishBothWays() throws {
        var p = try SessionPair()
        try p.pump()
        try p.client.terminate()
        try p.pump()
        #expect(p.client.isFinished)
    }

    @Test func everyNghttp2ErrorIsTypedWithItsCode() throws {
        let p = try SessionPair()
        // A server fed anything but the client preface.
        let e1 = #expect(throws: HTTP2Error.self) { _ = try p.server.receive(Array("GET / HTTP/1.1\r\n\r\n".utf8)) }
        #expect(e1?.code == HTTP2Error.badClientMagic)
        #expect(e1?.operation == "nghttp2_session_mem_recv")
        // Stream id 0 cannot be reset.
        let e2 = #expect(throws: HTTP2Error.self) { try p.client.submitReset(streamID: 0, errorCode: 0) }
        #expect(e2?.code == HTTP2Error.invalidArgument)
        // A response on a stream that does not exist.
        let e3 = #expect(throws: HTTP2Error.self) {
            try p.server.submitResponse(streamID: 1, status: 200, headers: HeaderList(), body: [])
        }
        #expect(e3?.code == HTTP2Error.invalidArgument)
    }
}

@Suite struct HTTP2KeepaliveTests {
    let s: UInt64 = 1_000_000_000

    @Test func pingsOnlyAfterTheIdleTimeAndOnceUntilAnswered() {
        var k = HTTP2Keepalive(pingAfterIdle: 3600, pingTimeout: 10)
        #expect(k.tick(now: 3599 * s, lastActivity: 0) == .nothing)
        #expect(k.tick(now: 3601 * s, lastActivity: 0) == .ping)
        #expect(k.tick(now: 3605 * s, lastActivity: 0) == .nothing, "one PING in flight")
        k.acknowledged()
        #expect(k.tick(now: 3606 * s, lastActivity: 3605 * s) == .nothing, "traffic since: idle again from there")
    }

    @Test func anUnansweredPingIsDeadAfterTheTimeout() {
        var k = HTTP2Keepalive(pingAfterIdle: 1, pingTimeout: 10)
        #expect(k.tick(now: 2 * s, lastActivity: 0) == .ping)
        #expect(k.tick(now: 12 * s, lastActivity: 0) == .nothing)
        #expect(k.tick(now: 12 * s + 1, lastActivity: 0) == .dead(sentAt: 2 * s))
    }
}
