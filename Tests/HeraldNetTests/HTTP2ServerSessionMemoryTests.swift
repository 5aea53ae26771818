import Testing

@testable import HeraldNet

/// A server session's nghttp2 allocates from its own `HTTP2Allocator` as a client's does
/// (issue #12): rounds of requests answered in memory, every answer intact, and the blocks
/// the answered streams freed kept for the next round instead of going back to malloc.
@Suite struct HTTP2ServerSessionMemoryTests {
    @Test(.enabled(if: HTTP2Allocator.enabled, "HERALD_NGHTTP2_MALLOC puts nghttp2 back on malloc"))
    func aServerSessionReusesTheBlocksOfAnsweredStreams() throws {
        var p = try SessionPair()
        let server = try #require(p.server.allocator, "the server session has its allocator")
        for round in 0..<3 {
            let ids = try (0..<200).map { try p.post("/3/device/\(round)-\($0)") }
            try p.pump()
            let requests = p.takeRequests()
            #expect(requests.count == 200)
            for r in requests {
                var h = HeaderList()
                h.append("apns-id", "id-\(r.streamID)")
                try p.server.submitResponse(streamID: r.streamID, status: 200, headers: h, body: [])
            }
            try p.pump()
            let responses = p.responses
            for id in ids {
                #expect(responses[id]?.status == 200)
                #expect(responses[id]?.header("apns-id") == "id-\(id)")
            }
            #expect(p.server.openStreams == 0)
            #expect(server.kept > 0, "freed blocks wait in the free lists for the next streams")
        }
    }
}
