import Testing

@testable import HeraldNet

/// The session's open-stream list (each stream knows its slot; retired ones are kept for
/// reuse up to 1024): answers in any order leave exactly the unanswered streams open,
/// each with its own tag, also past the spare list's bound.
@Suite struct HTTP2SessionStreamsTests {
    func post(_ p: SessionPair, _ i: Int) throws -> HTTP2StreamID {
        let auth: StaticString = "api.example"
        return try p.client.submitRequest(
            HTTP2Request(method: "POST", path: "/3/device/\(i)", body: HTTP2Body([1, 2, 3]), keepResponseHeaders: false),
            authority: UnsafeBufferPointer(start: auth.utf8Start, count: auth.utf8CodeUnitCount), extra: nil, idField: nil,
            tag: i)
    }

    @Test func answersInAnyOrderLeaveExactlyTheRestOpenWithTheirTags() throws {
        var p = try SessionPair(serverSettings: [.maxConcurrentStreams(2000)])
        try p.pump()
        // 1500 streams: more than the 1024 spare ones a session keeps.
        var ids: [HTTP2StreamID: Int] = [:]
        for i in 0..<1500 { ids[try post(p, i)] = i }
        try p.pump()
        var reqs = p.takeRequests()
        #expect(reqs.count == 1500)
        #expect(p.client.openStreams == 1500)
        // Answer every other one, from the last down (the slots are filled from the end).
        reqs.sort { $0.streamID > $1.streamID }
        let answered = reqs.enumerated().filter { $0.offset % 2 == 0 }.map(\.element.streamID)
        for id in answered { try p.server.submitResponse(streamID: id, status: 200, headers: HeaderList(), body: []) }
        try p.pump()
        var seen: [HTTP2StreamID: Int] = [:]
        for case .response(let id, let r, let tag) in p.clientEvents {
            #expect(r.status == 200)
            seen[id] = tag
        }
        #expect(seen.count == answered.count)
        #expect(seen.allSatisfy { ids[$0.key] == $0.value })
        let open = p.client.openStreamTags()
        #expect(open.count == 1500 - answered.count)
        #expect(Set(open.map(\.0)) == Set(ids.keys).subtracting(answered))
        #expect(open.allSatisfy { ids[$0.0] == $0.1 })
        #expect(open.map(\.0) == open.map(\.0).sorted())
        // The rest, then a new round on reused stream objects.
        for id in open.map(\.0) { try p.server.submitResponse(streamID: id, status: 200, headers: HeaderList(), body: []) }
        try p.pump()
        #expect(p.client.openStreams == 0)
        #expect(p.server.openStreams == 0)
        p.clientEvents.removeAll()
        let again = try post(p, 9999)
        try p.pump()
        let r = p.takeRequests()
        #expect(r.map(\.path) == ["/3/device/9999"])
        try p.server.submitResponse(streamID: again, status: 410, headers: HeaderList(), body: Array("{}".utf8))
        try p.pump()
        var last: (Int, Int?)?
        for case .response(let id, let resp, let tag) in p.clientEvents where id == again {
            last = (resp.status, tag)
        }
        #expect(last?.0 == 410)
        #expect(last?.1 == 9999)
        #expect(p.client.openStreams == 0)
    }
}
