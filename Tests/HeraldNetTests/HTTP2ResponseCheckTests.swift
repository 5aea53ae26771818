import CNghttp2
import Testing

@testable import HeraldNet

/// One response of a case: header blocks (1xx ones first, then the response), body (in
/// one DATA frame, if any) and trailers.
struct RawResponse {
    var blocks: [[([UInt8], [UInt8])]]
    var body: [UInt8]? = nil
    var trailers: [([UInt8], [UInt8])]? = nil
    /// END_STREAM on the last frame (false: the stream stays open).
    var ends = true
}

/// What a client made of a server's bytes: each stream's end as it reported it (the
/// answer's status, fields and body, or the reset's error code), and the RST_STREAM and
/// GOAWAY frames it wrote back.
struct ClientOutcome: Equatable {
    var ends: [String]
    var resets: [String]
    var error: Int32?
}

func answer(_ responses: [RawResponse], nghttp2Checks: Bool) -> ClientOutcome {
    var outcome = ClientOutcome(ends: [], resets: [], error: nil)
    do {
        let c = try HTTP2Session(
            role: .client, settings: [.enablePush(false)], connectionWindow: nil, maxBodyBytes: 1 << 16, nghttp2Checks: nghttp2Checks)
        let auth: StaticString = "api.example"
        var ids: [Int32] = []
        for _ in responses {
            ids.append(
                try c.submitRequest(
                    HTTP2Request(method: "POST", path: "/3/device/ab", body: HTTP2Body([0x61])),
                    authority: UnsafeBufferPointer(start: auth.utf8Start, count: auth.utf8CodeUnitCount), extra: nil, idField: nil))
        }
        let (sent, first) = try c.produce()
        var events = first
        let w = RawFrameWriter(serverReading: sent)
        for (id, r) in zip(ids, responses) {
            for (i, block) in r.blocks.enumerated() {
                let last = i == r.blocks.count - 1
                w.headers(block, streamID: id, endStream: last && r.ends && r.body == nil && r.trailers == nil)
            }
            if let body = r.body { w.data(id, body, endStream: r.ends && r.trailers == nil) }
            if let t = r.trailers { w.headers(t, streamID: id, endStream: r.ends) }
        }
        events += try c.receive(w.bytes)
        // What the client writes back (RST_STREAM, GOAWAY), and the streams its writing closes.
        var back: [UInt8] = []
        for _ in 0..<2 {
            let p = try c.produce()
            back += p.bytes
            events += p.events
        }
        outcome.resets = frames(back).filter { $0.type == 3 || $0.type == 7 }.map { "\($0.type):\($0.stream):\($0.code)" }
        for e in events {
            switch e {
            case .response(let id, let r, _):
                outcome.ends.append("\(id) \(r.status) \(r.headers.map { "\($0.0)=\($0.1)" }) \(r.body)")
            case .streamClosed(let id, let code, _):
                outcome.ends.append("\(id) reset \(code)")
            default:
                break
            }
        }
        outcome.ends.sort()
    } catch {
        outcome.error = error.code
    }
    return outcome
}

@Suite struct HTTP2ResponseCheckTests {
    static func b(_ s: String) -> [UInt8] { Array(s.utf8) }
    static func f(_ n: String, _ v: String) -> ([UInt8], [UInt8]) { (b(n), b(v)) }
    static let ok = [f(":status", "200"), f("apns-id", "6f1c6a54-8b7e-4d38-9c2b-0e5d7c1f9a41")]

    static func expectSame(_ responses: [RawResponse], _ label: String) {
        let reference = answer(responses, nghttp2Checks: true)
        let ours = answer(responses, nghttp2Checks: false)
        #expect(ours == reference, "\(label)")
    }

    /// The comparison can tell outcomes apart: a malformed answer is reset with
    /// PROTOCOL_ERROR and not delivered, a well-formed one is delivered with its fields.
    @Test func theOutcomesCompareWhatMatters() {
        for nghttp2 in [true, false] {
            let o = answer(
                [RawResponse(blocks: [Self.ok]), RawResponse(blocks: [Self.ok + [Self.f("connection", "close")]])], nghttp2Checks: nghttp2)
            #expect(o.ends.count == 2)
            #expect(o.ends.first?.hasPrefix("1 200 [\"apns-id=6f1c6a54") == true, "\(o.ends)")
            #expect(o.ends.last == "3 reset 1", "\(o.ends)")
            #expect(o.resets == ["3:3:1"], "\(o.resets)")
        }
    }

    @Test func wellFormedResponsesPassTheCheck() {
        var c = HTTP2ResponseCheck()
        for (n, v) in Self.ok + [Self.f("content-length", "3"), Self.f("x", "tab\tinside")] {
            #expect(n.withUnsafeBufferPointer { nb in v.withUnsafeBufferPointer { c.field(nb, $0, trailer: false) } } == .keep)
        }
        let ended = c.headersEnded(endStream: false)
        #expect(ended)
        let within = c.data(3) && c.ended()
        #expect(within)
        var over = c
        let beyond = over.data(1)
        #expect(!beyond)
        #expect(over.isMalformed)
    }

    /// Each rule alone, against nghttp2's own checks on the same bytes: the same answers
    /// delivered, the same resets on the wire.
    @Test func eachRuleAnswersAsNghttp2Does() {
        let f = Self.f
        let ok = Self.ok
        let body = Self.b("{\"reason\":\"BadDeviceToken\"}")
        let bad = [f(":status", "400"), f("content-type", "application/json")]
        let cases: [(String, [RawResponse])] = [
            ("200", [RawResponse(blocks: [ok])]),
            ("400 with body", [RawResponse(blocks: [bad], body: body)]),
            ("content-length", [RawResponse(blocks: [bad + [f("content-length", "\(body.count)")]], body: body)]),
            ("content-length short", [RawResponse(blocks: [bad + [f("content-length", "\(body.count + 1)")]], body: body)]),
            ("content-length long", [RawResponse(blocks: [bad + [f("content-length", "\(body.count - 1)")]], body: body)]),
            ("content-length no body", [RawResponse(blocks: [ok + [f("content-length", "2")]])]),
            ("content-length zero", [RawResponse(blocks: [ok + [f("content-length", "0")]])]),
            ("content-length twice", [RawResponse(blocks: [ok + [f("content-length", "0"), f("content-length", "0")]])]),
            ("content-length text", [RawResponse(blocks: [ok + [f("content-length", "1a")]], body: Self.b("x"))]),
            ("content-length empty", [RawResponse(blocks: [ok + [f("content-length", "")]])]),
            ("content-length overflow", [RawResponse(blocks: [ok + [f("content-length", "99999999999999999999")]])]),
            ("no status", [RawResponse(blocks: [[f("apns-id", "x")]])]),
            ("status twice", [RawResponse(blocks: [ok + [f(":status", "200")]])]),
            ("status after a field", [RawResponse(blocks: [[f("apns-id", "x"), f(":status", "200")]])]),
            ("status two digits", [RawResponse(blocks: [[f(":status", "20")]])]),
            ("status four digits", [RawResponse(blocks: [[f(":status", "2000")]])]),
            ("status letters", [RawResponse(blocks: [[f(":status", "2a0")]])]),
            ("status blank", [RawResponse(blocks: [[f(":status", "   ")]])]),
            ("status 099", [RawResponse(blocks: [[f(":status", "099")]])]),
            ("status 999", [RawResponse(blocks: [[f(":status", "999")]])]),
            ("path", [RawResponse(blocks: [ok + [f(":path", "/")]])]),
            ("pseudo first", [RawResponse(blocks: [[f(":path", "/"), f(":status", "200")]])]),
            ("colon", [RawResponse(blocks: [ok + [f(":", "x")]])]),
            ("empty name", [RawResponse(blocks: [ok + [f("", "x")]])]),
            ("upper case", [RawResponse(blocks: [ok + [f("Apns-Unique-Id", "x")]])]),
            ("space in name", [RawResponse(blocks: [ok + [f("a b", "x")]])]),
            ("colon in name", [RawResponse(blocks: [ok + [f("a:b", "x")]])]),
            ("CR LF", [RawResponse(blocks: [ok + [f("x", "a\r\nb")]])]),
            ("NUL", [RawResponse(blocks: [ok + [f("x", "a\u{0}b")]])]),
            ("DEL", [RawResponse(blocks: [ok + [f("x", "a\u{7F}b")]])]),
            ("HTAB", [RawResponse(blocks: [ok + [f("x", "a\tb")]])]),
            ("blank ends", [RawResponse(blocks: [ok + [f("x", " a ")]])]),
            ("high bytes", [RawResponse(blocks: [ok + [(Self.b("x"), [0x80, 0xFF, 0xC3, 0xA9])]])]),
            ("long value", [RawResponse(blocks: [ok + [f("x", String(repeating: "abcdefgh", count: 9) + "\u{1}")]])]),
            ("connection", [RawResponse(blocks: [ok + [f("connection", "close")]])]),
            ("keep-alive", [RawResponse(blocks: [ok + [f("keep-alive", "1")]])]),
            ("proxy-connection", [RawResponse(blocks: [ok + [f("proxy-connection", "1")]])]),
            ("transfer-encoding", [RawResponse(blocks: [ok + [f("transfer-encoding", "chunked")]])]),
            ("upgrade", [RawResponse(blocks: [ok + [f("upgrade", "h2c")]])]),
            ("te trailers", [RawResponse(blocks: [ok + [f("te", "TraiLers")]])]),
            ("te gzip", [RawResponse(blocks: [ok + [f("te", "gzip")]])]),
            ("host", [RawResponse(blocks: [ok + [f("host", "a b")]])]),
            ("100 then 200", [RawResponse(blocks: [[f(":status", "100")], ok])]),
            ("103 with fields then 400", [RawResponse(blocks: [[f(":status", "103"), f("link", "</a>")], bad], body: body)]),
            ("two 1xx", [RawResponse(blocks: [[f(":status", "100")], [f(":status", "102")], ok])]),
            ("101 then 200", [RawResponse(blocks: [[f(":status", "101")], ok])]),
            ("100 ends", [RawResponse(blocks: [[f(":status", "100")]])]),
            ("100 then DATA", [RawResponse(blocks: [[f(":status", "100")]], body: Self.b("x"))]),
            ("100 with content-length", [RawResponse(blocks: [[f(":status", "100"), f("content-length", "5")], ok])]),
            ("204 with DATA", [RawResponse(blocks: [[f(":status", "204")]], body: Self.b("x"))]),
            ("304 with DATA", [RawResponse(blocks: [[f(":status", "304")]], body: Self.b("x"))]),
            ("204 empty", [RawResponse(blocks: [[f(":status", "204")]], body: [])]),
            ("204 content-length 0", [RawResponse(blocks: [[f(":status", "204"), f("content-length", "0")]])]),
            ("204 content-length 1", [RawResponse(blocks: [[f(":status", "204"), f("content-length", "1")]], body: Self.b("x"))]),
            ("204 content-length 00", [RawResponse(blocks: [[f(":status", "204"), f("content-length", "00")]])]),
            (
                "204 content-length twice",
                [RawResponse(blocks: [[f(":status", "204"), f("content-length", "0"), f("content-length", "0")]])]
            ),
            ("304 content-length", [RawResponse(blocks: [[f(":status", "304"), f("content-length", "5")]])]),
            ("trailers", [RawResponse(blocks: [bad], body: body, trailers: [f("x-trailer", "1")])]),
            ("trailers not ending", [RawResponse(blocks: [bad], body: body, trailers: [f("x-trailer", "1")], ends: false)]),
            ("trailers with status", [RawResponse(blocks: [bad], body: body, trailers: [f(":status", "200")])]),
            ("trailers with content-length", [RawResponse(blocks: [bad], body: body, trailers: [f("content-length", "3")])]),
            ("trailers with bad value", [RawResponse(blocks: [bad], body: body, trailers: [f("x", "a\nb")])]),
            ("open", [RawResponse(blocks: [ok], ends: false)]),
            ("open with body", [RawResponse(blocks: [bad], body: body, ends: false)]),
        ]
        for (label, responses) in cases {
            // After a well-formed answer on the same connection: HPACK state and streams go on.
            Self.expectSame([RawResponse(blocks: [Self.ok])] + responses + [RawResponse(blocks: [Self.ok])], label)
        }
    }

    /// Random responses from pieces that break the rules (names, values, orders, 1xx,
    /// bodies, trailers): the client ends every one exactly as nghttp2's checks do.
    @Test func randomResponsesAnswerAsNghttp2Does() {
        var rng = XorShift(state: 0x2545_F491_4F6C_DD1D)
        let names = [
            ":status", ":path", "content-length", "te", "connection", "upgrade", "apns-id", "apns-unique-id", "x", "X", "a b", "",
            ":",
        ]
        let alphabet: [UInt8] = [0x61, 0x41, 0x20, 0x09, 0x00, 0x0D, 0x7F, 0x80, 0xFF, 0x2D, 0x3A, 0x30, 0x33]
        let values = ["200", "100", "204", "410", "3", "0", "trailers", "6f1c6a54-8b7e-4d38-9c2b-0e5d7c1f9a41"]
        for n in 0..<1000 {
            var blocks: [[([UInt8], [UInt8])]] = []
            if rng.next() % 4 == 0 { blocks.append([Self.f(":status", ["100", "103", "101"].randomElement(using: &rng)!)]) }
            var fields: [([UInt8], [UInt8])] = rng.next() % 4 != 0 ? [Self.f(":status", values.randomElement(using: &rng)!)] : []
            for _ in 0..<Int(rng.next() % 4) {
                let name = Self.b(names.randomElement(using: &rng)!)
                var value: [UInt8]
                if rng.next() % 2 == 0 {
                    value = Self.b(values.randomElement(using: &rng)!)
                } else {
                    value = (0..<Int(rng.next() % 40)).map { _ in alphabet.randomElement(using: &rng)! }
                }
                fields.insert((name, value), at: Int(rng.next() % UInt64(fields.count + 1)))
            }
            blocks.append(fields)
            var r = RawResponse(blocks: blocks)
            if rng.next() % 2 == 0 { r.body = Array(repeating: 0x62, count: Int(rng.next() % 5)) }
            if rng.next() % 5 == 0 {
                r.trailers = [(Self.b(names.randomElement(using: &rng)!), Self.b(values.randomElement(using: &rng)!))]
            }
            r.ends = rng.next() % 10 != 0
            Self.expectSame(
                [RawResponse(blocks: [Self.ok]), r, RawResponse(blocks: [Self.ok])],
                "random case \(n): \(blocks.map { $0.map { (String(decoding: $0.0, as: UTF8.self), $0.1) } })")
        }
    }

    /// A response's value class is nghttp2's `nghttp2_check_header_value_rfc9113`, for every
    /// byte value at every place of values from 0 to 40 bytes.
    @Test func valueClassMatchesNghttp2() {
        var issues = 0
        for length in 0...40 {
            for place in 0..<max(1, length) {
                for byte in 0...255 {
                    var v = [UInt8](repeating: 0x61, count: length)
                    if length > 0 { v[place] = UInt8(byte) }
                    let ours = v.withUnsafeBufferPointer { HTTP2RequestCheck.isValue($0) }
                    let theirs = v.withUnsafeBufferPointer { nghttp2_check_header_value_rfc9113($0.baseAddress, $0.count) } != 0
                    if ours != theirs { issues += 1 }
                    if length == 0 { break }
                }
            }
        }
        #expect(issues == 0)
    }
}
