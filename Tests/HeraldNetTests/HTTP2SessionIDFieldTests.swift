import Testing

@testable import HeraldNet

/// A request's UUID field (`apns-id`) sent with indexing once, then kept out of the HPACK
/// table: nghttp2's deflater names the later ones by the table entry's index, so each later
/// HEADERS frame is shorter than with the name sent as a literal, and the peer still reads
/// every request's own value (reference §1.4).
@Suite struct HTTP2SessionIDFieldTests {
    static let ids: [StaticString] = [
        "0a1b2c3d-4e5f-4a6b-8c7d-8e9fa0b1c2d3", "11111111-2222-4333-8444-555555555555", "abcdefab-cdef-4abc-9def-abcdefabcdef",
    ]

    /// Sends the three ids, the first indexed when `indexFirst`; returns the bytes the client
    /// produced for each request and the ids the server read.
    static func send(indexFirst: Bool) throws -> (bytes: [Int], read: [String?]) {
        var p = try SessionPair()
        try p.pump()  // the prefaces and settings, out of the way
        let auth: StaticString = "api.example"
        var bytes: [Int] = []
        var read: [String?] = []
        for (i, id) in ids.enumerated() {
            _ = try p.client.submitRequest(
                HTTP2Request(method: "POST", path: "/3/device/abc", body: nil),
                authority: UnsafeBufferPointer(start: auth.utf8Start, count: auth.utf8CodeUnitCount), extra: nil,
                idField: ("apns-id", UnsafeBufferPointer(start: id.utf8Start, count: id.utf8CodeUnitCount), !(indexFirst && i == 0)))
            let out = try p.client.produce()
            bytes.append(out.bytes.count)
            p.serverEvents += try p.server.receive(out.bytes)
            try p.pump()
            read += p.takeRequests().map { $0.header("apns-id") }
        }
        return (bytes, read)
    }

    @Test func aUUIDFieldIndexedOnceIsNamedByIndexLaterAndEveryValueArrives() throws {
        let indexed = try Self.send(indexFirst: true)
        let literal = try Self.send(indexFirst: false)
        let expected = Self.ids.map { "\($0)" }
        #expect(indexed.read == expected)
        #expect(literal.read == expected)
        // The first request carries the name either way (and, indexed, adds the entry).
        #expect(indexed.bytes[0] == literal.bytes[0])
        // Later ones: the name as index 62 (the newest entry: two bytes with the 4-bit prefix
        // of a never-indexed field) instead of a new-name literal (the prefix byte, a length
        // and "apns-id" in 5 Huffman-coded bytes: 7).
        for i in 1..<Self.ids.count {
            #expect(literal.bytes[i] - indexed.bytes[i] == 5, "request \(i): \(indexed.bytes) vs \(literal.bytes)")
        }
    }
}
