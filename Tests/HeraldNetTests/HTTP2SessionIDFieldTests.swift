import CNghttp2
import Testing

@testable import HeraldNet

/// A request's UUID field (`apns-id`) is a per-request value and never enters the HPACK
/// dynamic table (reference §1.4: "never index per-request values (`:path` with a token,
/// `apns-id`)", in libnghttp2 `NGHTTP2_NV_FLAG_NO_INDEX`), while the peer still reads every
/// request's own value.
@Suite struct HTTP2SessionIDFieldTests {
    static let ids: [StaticString] = [
        "0a1b2c3d-4e5f-4a6b-8c7d-8e9fa0b1c2d3", "11111111-2222-4333-8444-555555555555", "abcdefab-cdef-4abc-9def-abcdefabcdef",
    ]

    @Test func aUUIDFieldNeverEntersTheTableAndEveryValueArrives() throws {
        var p = try SessionPair()
        try p.pump()  // the prefaces and settings, out of the way
        let auth: StaticString = "api.example"
        let authority = UnsafeBufferPointer(start: auth.utf8Start, count: auth.utf8CodeUnitCount)
        func send(_ id: StaticString?) throws -> String? {
            _ = try p.client.submitRequest(
                HTTP2Request(method: "POST", path: "/3/device/abc", body: nil), authority: authority, extra: nil,
                idField: id.map { ("apns-id", UnsafeBufferPointer(start: $0.utf8Start, count: $0.utf8CodeUnitCount)) })
            let out = try p.client.produce()
            p.serverEvents += try p.server.receive(out.bytes)
            try p.pump()
            return p.takeRequests().first?.header("apns-id")
        }
        // A request without the field: what the table holds from the other fields.
        #expect(try send(nil) == nil)
        let withoutID = nghttp2_session_get_hd_deflate_dynamic_table_size(p.client.raw)
        var read: [String?] = []
        for id in Self.ids { read.append(try send(id)) }
        #expect(read == Self.ids.map { "\($0)" })
        // An indexed apns-id would have added 32 + 7 + 36 bytes per distinct value.
        #expect(nghttp2_session_get_hd_deflate_dynamic_table_size(p.client.raw) == withoutID)
        #expect(nghttp2_session_get_hd_inflate_dynamic_table_size(p.server.raw) == withoutID)
    }
}
