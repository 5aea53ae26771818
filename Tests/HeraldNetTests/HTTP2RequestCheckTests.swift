import CNghttp2
import Testing

@testable import HeraldNet

/// A connection's bytes carrying messages with any fields at all: nghttp2 does not check
/// what it sends, and DATA frames are written by hand (any length, any END_STREAM), so
/// malformed requests (a client's writer) and responses (a server's, which first reads the
/// client's requests so that their streams exist) can be made.
final class RawFrameWriter {
    let raw: OpaquePointer
    var bytes: [UInt8] = []

    /// A client's.
    init() {
        raw = Self.session { s, cbs in nghttp2_session_client_new(&s, cbs, nil) }
        nghttp2_submit_settings(raw, 0, nil, 0)
    }

    /// A server's, after reading `requests` (a client's bytes).
    init(serverReading requests: [UInt8]) {
        raw = Self.session { s, cbs in nghttp2_session_server_new(&s, cbs, nil) }
        nghttp2_submit_settings(raw, 0, nil, 0)
        _ = requests.withUnsafeBufferPointer { nghttp2_session_mem_recv(raw, $0.baseAddress, $0.count) }
        drain()
    }

    private static func session(_ make: (inout OpaquePointer?, OpaquePointer?) -> Int32) -> OpaquePointer {
        var cbs: OpaquePointer?
        nghttp2_session_callbacks_new(&cbs)
        var s: OpaquePointer?
        _ = make(&s, cbs)
        nghttp2_session_callbacks_del(cbs)
        return s!
    }

    deinit { nghttp2_session_del(raw) }

    /// Names and values sent as given: nghttp2 lower-cases the names it copies.
    static let asGiven = UInt8(NGHTTP2_NV_FLAG_NO_COPY_NAME.rawValue | NGHTTP2_NV_FLAG_NO_COPY_VALUE.rawValue)

    private func drain() {
        while true {
            var p: UnsafePointer<UInt8>?
            let n = nghttp2_session_mem_send(raw, &p)
            guard n > 0, let p else { break }
            bytes += UnsafeBufferPointer(start: p, count: n)
        }
    }

    /// A HEADERS frame (a client's new stream when `streamID` is -1); returns its stream id.
    @discardableResult
    func headers(_ fields: [([UInt8], [UInt8])], streamID: Int32 = -1, endStream: Bool) -> Int32 {
        let names = fields.map { f in UnsafeMutablePointer<UInt8>.allocate(capacity: max(1, f.0.count)) }
        let values = fields.map { f in UnsafeMutablePointer<UInt8>.allocate(capacity: max(1, f.1.count)) }
        defer {
            for p in names + values { p.deallocate() }
        }
        var nva: [nghttp2_nv] = []
        for (i, f) in fields.enumerated() {
            names[i].update(from: f.0, count: f.0.count)
            values[i].update(from: f.1, count: f.1.count)
            nva.append(nghttp2_nv(name: names[i], value: values[i], namelen: f.0.count, valuelen: f.1.count, flags: Self.asGiven))
        }
        let flags = endStream ? UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) : UInt8(NGHTTP2_FLAG_NONE.rawValue)
        let id = nghttp2_submit_headers(raw, flags, streamID, nil, nva, nva.count, nil)
        drain()
        return streamID == -1 ? id : streamID
    }

    /// A DATA frame written by hand.
    func data(_ streamID: Int32, _ payload: [UInt8], endStream: Bool) {
        let n = payload.count
        bytes += [UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF), 0, endStream ? 1 : 0]
        bytes += [UInt8(streamID >> 24 & 0x7F), UInt8(streamID >> 16 & 0xFF), UInt8(streamID >> 8 & 0xFF), UInt8(streamID & 0xFF)]
        bytes += payload
    }
}

/// One request of a case: its header block, body (in one DATA frame, if any) and trailers.
struct RawRequest {
    var fields: [([UInt8], [UInt8])]
    var body: [UInt8]? = nil
    var trailers: [([UInt8], [UInt8])]? = nil
    /// END_STREAM on the last frame (false: the stream stays open).
    var ends = true
}

/// What a server made of a connection's bytes: everything it wrote back (its answers to
/// the requests it accepted, each with a 20,000-byte body so that stream priorities show
/// in the order of DATA frames; RST_STREAM; GOAWAY), and the requests it handed over.
struct ServerOutcome: Equatable {
    var written: [UInt8]
    var requests: [[UInt8]]
    var error: Int32?
}

func serve(_ requests: [RawRequest], nghttp2Checks: Bool) -> ServerOutcome {
    let w = RawFrameWriter()
    for r in requests {
        let headersEnd = r.ends && r.body == nil && r.trailers == nil
        let id = w.headers(r.fields, endStream: headersEnd)
        if let body = r.body { w.data(id, body, endStream: r.ends && r.trailers == nil) }
        if let t = r.trailers { w.headers(t, streamID: id, endStream: r.ends) }
    }
    var outcome = ServerOutcome(written: [], requests: [], error: nil)
    do {
        let s = try HTTP2Session(
            role: .server, settings: [.maxConcurrentStreams(100), .noRFC7540Priorities(true)], connectionWindow: nil,
            maxBodyBytes: 1 << 16, nghttp2Checks: nghttp2Checks)
        let events = try s.receive(w.bytes)
        for case .request(let r) in events {
            let f = r.fields
            outcome.requests.append(
                f.bytes + f.entries.flatMap { [UInt8($0.nameLen), UInt8($0.valueLen)] } + r.body + [UInt8(r.bodySize & 0xFF)])
            try s.submitResponse(streamID: r.streamID, status: 200, headers: HeaderList(), body: Array(repeating: 0x62, count: 20_000))
        }
        outcome.written = try s.produce().bytes
    } catch {
        outcome.error = error.code
    }
    return outcome
}

/// A small deterministic generator (xorshift), so a failing case can be replayed.
struct XorShift: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        return state
    }
}

/// The frames a server wrote, as (type, stream id, RST_STREAM code or 0), in order.
func frames(_ b: [UInt8]) -> [(type: UInt8, stream: Int32, code: UInt32)] {
    var out: [(UInt8, Int32, UInt32)] = []
    var i = 0
    while i + 9 <= b.count {
        let len = Int(b[i]) << 16 | Int(b[i + 1]) << 8 | Int(b[i + 2])
        let id = Int32(b[i + 5] & 0x7F) << 24 | Int32(b[i + 6]) << 16 | Int32(b[i + 7]) << 8 | Int32(b[i + 8])
        var code: UInt32 = 0
        if b[i + 3] == 3 { code = UInt32(b[i + 9]) << 24 | UInt32(b[i + 10]) << 16 | UInt32(b[i + 11]) << 8 | UInt32(b[i + 12]) }
        out.append((b[i + 3], id, code))
        i += 9 + len
    }
    return out
}

@Suite struct HTTP2RequestCheckTests {
    static func b(_ s: String) -> [UInt8] { Array(s.utf8) }
    static func f(_ n: String, _ v: String) -> ([UInt8], [UInt8]) { (b(n), b(v)) }
    static let base = [f(":method", "POST"), f(":scheme", "https"), f(":authority", "api.example"), f(":path", "/3/device/ab")]

    static func expectSame(_ requests: [RawRequest], _ label: String) {
        let reference = serve(requests, nghttp2Checks: true)
        let ours = serve(requests, nghttp2Checks: false)
        #expect(ours == reference, "\(label)")
    }

    /// The comparison can tell outcomes apart: a refused request is reset with PROTOCOL_ERROR
    /// and not handed over, an accepted one is answered; `u=0` moves an answer's DATA first.
    @Test func theOutcomesCompareWhatMatters() {
        for nghttp2 in [true, false] {
            let refused = serve(
                [RawRequest(fields: Self.base), RawRequest(fields: Self.base + [Self.f("X", "1")])], nghttp2Checks: nghttp2)
            #expect(refused.requests.count == 1)
            #expect(frames(refused.written).filter { $0.type == 3 }.map { "\($0.stream):\($0.code)" } == ["3:1"])
            let urgent = serve(
                [RawRequest(fields: Self.base), RawRequest(fields: Self.base + [Self.f("priority", "u=0")])], nghttp2Checks: nghttp2)
            #expect(urgent.requests.count == 2)
            #expect(frames(urgent.written).first { $0.type == 0 }?.stream == 3)
            let plain = serve(
                [RawRequest(fields: Self.base), RawRequest(fields: Self.base + [Self.f("priority", "u=9")])], nghttp2Checks: nghttp2)
            #expect(frames(plain.written).first { $0.type == 0 }?.stream == 1)
        }
    }

    @Test func wellFormedRequestsPassTheCheck() {
        var c = HTTP2RequestCheck()
        for (n, v) in Self.base + [Self.f("apns-topic", "x"), Self.f("content-length", "3"), Self.f("te", "Trailers")] {
            #expect(n.withUnsafeBufferPointer { nb in v.withUnsafeBufferPointer { c.field(nb, $0, trailer: false) } } != .malformed)
        }
        #expect(c.headersEnded(endStream: false))
        #expect(!c.ended())
        let within = c.data(2) && c.data(1)
        #expect(within)
        #expect(c.ended())
        var over = c
        let beyond = over.data(1)
        #expect(!beyond)
    }

    /// Each rule alone, against nghttp2's own checks on the same bytes: the same RST_STREAM
    /// (or answer) on the wire, the same requests handed over.
    @Test func eachRuleAnswersAsNghttp2Does() {
        let f = Self.f
        let base = Self.base
        var cases: [(String, [RawRequest])] = [
            ("valid", [RawRequest(fields: base)]),
            ("valid with body", [RawRequest(fields: base + [f("content-length", "3")], body: Self.b("abc"))]),
            ("content-length short", [RawRequest(fields: base + [f("content-length", "4")], body: Self.b("abc"))]),
            ("content-length long", [RawRequest(fields: base + [f("content-length", "2")], body: Self.b("abc"))]),
            ("content-length no body", [RawRequest(fields: base + [f("content-length", "2")])]),
            ("content-length zero", [RawRequest(fields: base + [f("content-length", "0")])]),
            (
                "content-length twice",
                [RawRequest(fields: base + [f("content-length", "3"), f("content-length", "3")], body: Self.b("abc"))]
            ),
            ("content-length text", [RawRequest(fields: base + [f("content-length", "3a")], body: Self.b("abc"))]),
            ("content-length plus", [RawRequest(fields: base + [f("content-length", "+3")], body: Self.b("abc"))]),
            ("content-length empty", [RawRequest(fields: base + [f("content-length", "")])]),
            ("content-length overflow", [RawRequest(fields: base + [f("content-length", "99999999999999999999")])]),
            ("content-length in trailers", [RawRequest(fields: base, body: Self.b("abc"), trailers: [f("content-length", "3")])]),
            ("content-length wrong in trailers", [RawRequest(fields: base, body: Self.b("abc"), trailers: [f("content-length", "2")])]),
            ("trailers", [RawRequest(fields: base, body: Self.b("abc"), trailers: [f("x-t", "1")])]),
            ("trailers without end", [RawRequest(fields: base, body: Self.b("abc"), trailers: [f("x-t", "1")], ends: false)]),
            ("pseudo in trailers", [RawRequest(fields: base, body: Self.b("abc"), trailers: [f(":path", "/x")])]),
            ("bad trailer value", [RawRequest(fields: base, body: Self.b("abc"), trailers: [f("x-t", " 1")])]),
            ("open stream", [RawRequest(fields: base, ends: false)]),
            ("open stream with body", [RawRequest(fields: base, body: Self.b("abc"), ends: false)]),
            ("pseudo after regular", [RawRequest(fields: [base[0], base[1], f("x", "1"), base[2], base[3]])]),
            ("unknown pseudo", [RawRequest(fields: base + [f(":foo", "1")])]),
            (":status in a request", [RawRequest(fields: base + [f(":status", "200")])]),
            (":protocol", [RawRequest(fields: base + [f(":protocol", "websocket")])]),
            (":", [RawRequest(fields: base + [f(":", "1")])]),
            ("empty name", [RawRequest(fields: base + [f("", "1")])]),
            ("uppercase name", [RawRequest(fields: base + [f("Apns-Topic", "1")])]),
            ("space in name", [RawRequest(fields: base + [f("a b", "1")])]),
            ("colon in name", [RawRequest(fields: base + [f("a:b", "1")])]),
            ("high byte in name", [RawRequest(fields: base + [([0x61, 0xC3, 0xA9], Self.b("1"))])]),
            ("tchars in name", [RawRequest(fields: base + [f("!#$%&'*+-.^_`|~09az", "1")])]),
            ("CONNECT", [RawRequest(fields: [f(":method", "CONNECT"), f(":authority", "a:1")])]),
            ("CONNECT with path", [RawRequest(fields: [f(":method", "CONNECT"), f(":authority", "a:1"), f(":path", "/")])]),
            ("CONNECT without authority", [RawRequest(fields: [f(":method", "CONNECT")])]),
            (
                "CONNECT with content-length",
                [RawRequest(fields: [f(":method", "CONNECT"), f(":authority", "a:1"), f("content-length", "9")], body: Self.b("abc"))]
            ),
            ("OPTIONS *", [RawRequest(fields: [f(":method", "OPTIONS"), f(":scheme", "https"), f(":authority", "a"), f(":path", "*")])]),
            ("GET *", [RawRequest(fields: [f(":method", "GET"), f(":scheme", "https"), f(":authority", "a"), f(":path", "*")])]),
            ("relative path", [RawRequest(fields: [f(":method", "GET"), f(":scheme", "HTTPS"), f(":authority", "a"), f(":path", "x")])]),
            (
                "other scheme, relative path",
                [RawRequest(fields: [f(":method", "GET"), f(":scheme", "foo+1.x-y"), f(":authority", "a"), f(":path", "x")])]
            ),
            ("bad scheme", [RawRequest(fields: [f(":method", "GET"), f(":scheme", "1foo"), f(":authority", "a"), f(":path", "/")])]),
            ("bad scheme char", [RawRequest(fields: [f(":method", "GET"), f(":scheme", "fo_o"), f(":authority", "a"), f(":path", "/")])]),
            ("host instead of authority", [RawRequest(fields: [base[0], base[1], base[3], f("host", "a.example")])]),
            ("host twice", [RawRequest(fields: base + [f("host", "a"), f("host", "a")])]),
            ("host empty", [RawRequest(fields: base + [f("host", "")])]),
            ("host bad", [RawRequest(fields: base + [f("host", "a b")])]),
            ("no authority", [RawRequest(fields: [base[0], base[1], base[3]])]),
            ("authority bad", [RawRequest(fields: [base[0], base[1], f(":authority", "a\"b"), base[3]])]),
            ("authority empty", [RawRequest(fields: [base[0], base[1], f(":authority", ""), base[3]])]),
            ("path empty", [RawRequest(fields: [base[0], base[1], base[2], f(":path", "")])]),
            ("path space", [RawRequest(fields: [base[0], base[1], base[2], f(":path", "/a b")])]),
            ("path tab", [RawRequest(fields: [base[0], base[1], base[2], f(":path", "/a\tb")])]),
            ("path high byte", [RawRequest(fields: [base[0], base[1], base[2], (Self.b(":path"), [0x2F, 0xFF, 0x80])])]),
            ("method empty", [RawRequest(fields: [f(":method", ""), base[1], base[2], base[3]])]),
            ("method bad", [RawRequest(fields: [f(":method", "PO ST"), base[1], base[2], base[3]])]),
            ("method lowercase", [RawRequest(fields: [f(":method", "post"), base[1], base[2], base[3]])]),
            ("no method", [RawRequest(fields: [base[1], base[2], base[3]])]),
            ("no scheme", [RawRequest(fields: [base[0], base[2], base[3]])]),
            ("no path", [RawRequest(fields: [base[0], base[1], base[2]])]),
            ("te trailers", [RawRequest(fields: base + [f("te", "TRAILERS")])]),
            ("te gzip", [RawRequest(fields: base + [f("te", "gzip")])]),
            ("empty value", [RawRequest(fields: base + [f("x", "")])]),
            ("inner space and tab", [RawRequest(fields: base + [f("x", "a b\tc")])]),
        ]
        for name in ["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"] {
            cases.append((name, [RawRequest(fields: base + [f(name, "x")])]))
        }
        for pseudo in [":method", ":scheme", ":authority", ":path"] {
            let v = base.first { $0.0 == Self.b(pseudo) }!.1
            cases.append(("\(pseudo) twice", [RawRequest(fields: base + [(Self.b(pseudo), v)])]))
        }
        for byte: UInt8 in [0x00, 0x01, 0x08, 0x09, 0x0A, 0x0D, 0x1F, 0x20, 0x7E, 0x7F, 0x80, 0xFF] {
            for at in [
                [byte], [0x61, byte], [byte, 0x61], [0x61, byte, 0x61],
                Array(repeating: 0x61, count: 9) + [byte] + Array(repeating: 0x61, count: 9),
            ] {
                cases.append(("value \(at)", [RawRequest(fields: base + [(Self.b("x"), at)])]))
                cases.append(("path \(at)", [RawRequest(fields: [base[0], base[1], base[2], (Self.b(":path"), [0x2F] + at)])]))
                cases.append(("authority \(at)", [RawRequest(fields: [base[0], base[1], (Self.b(":authority"), at), base[3]])]))
            }
        }
        for (label, requests) in cases { Self.expectSame(requests, label) }
    }

    /// RFC 9218's `priority` field: nghttp2 reorders the answers' DATA frames by the urgency it
    /// parsed; two streams answered in order, the second with the field, must come out in the
    /// same order (and bytes) as with nghttp2's own parser.
    @Test func priorityFieldsOrderAnswersAsNghttp2Does() {
        let values = [
            "u=0", "u=7", "u=8", "u=-1", "u=1.5", "u=\"1\"", "u=a", "i", "i=?0", "i=?1", "i=1", "u=0, i", "u=0,i", "u=0 ,i",
            "u=0 , i", "u=0\t,\ti", "u=0;a=1", "u=0;a", "u=0;A=1", "u=0; a=1", "u=0;a=", "a=(1 2), u=1", "a=(1 2;x), u=1",
            "a=(1 2)x, u=1", "a=( 1  2 ), u=1", "a=(1 2), u=1", "a=(), u=0", "a=(1", "b=:YQ==:, u=1", "b=:YQ, u=1", "b=:Y-Q:, u=1",
            "s=\"a\\\"b\", u=1", "s=\"a\\b\", u=1", "s=\"a, u=1", "t=Tok/x:y, u=1", "t=*x, u=1", "d=1.234, u=1", "d=1.2345, u=1",
            "d=1234567890123.1, u=1", "d=1., u=1", "d=-1.5, u=1", "n=123456789012345, u=1", "n=1234567890123456, u=1", "n=-, u=1",
            "*x=1, u=1", "X=1, u=1", "1x=1, u=1", "u=1,", "u=1, ,i", ",", "u=1, u=5", "i, u=2, i=?0", "u=?1", "u=(1)", "i=(?1)",
            "u=1;i", "k=?", "k=?2", "u=00", "u=-0", "u=1 x", "u=1x", "u", "u=", "x-y_z.*=1, u=2", "u=2, i;p=\"q\"", "u=5,i",
        ]
        let f = Self.f
        for v in values {
            Self.expectSame([RawRequest(fields: Self.base), RawRequest(fields: Self.base + [f("priority", v)])], "priority: \(v)")
            Self.expectSame(
                [RawRequest(fields: Self.base + [f("priority", "u=2")]), RawRequest(fields: Self.base + [f("priority", v)])],
                "u=2, then priority: \(v)")
        }
        // In trailers the field is not read.
        Self.expectSame(
            [
                RawRequest(fields: Self.base),
                RawRequest(fields: Self.base, body: Self.b("x"), trailers: [f("priority", "u=0")]),
            ], "priority in trailers")
    }

    /// Random requests from pieces that break the rules (names, values, orders, lengths):
    /// the server answers every one exactly as nghttp2's checks do.
    @Test func randomRequestsAnswerAsNghttp2Does() {
        var rng = XorShift(state: 0x9E37_79B9_7F4A_7C15)
        let names = [
            ":method", ":scheme", ":authority", ":path", ":protocol", ":status", "host", "content-length", "te", "connection",
            "upgrade", "priority", "apns-id", "x", "X", "a b", "", ":", "a:b",
        ]
        let alphabet: [UInt8] = [0x61, 0x41, 0x20, 0x09, 0x00, 0x0D, 0x7F, 0x80, 0xFF, 0x2F, 0x2A, 0x3A, 0x30, 0x33, 0x2C, 0x3D, 0x22]
        let values = [
            "POST", "GET", "CONNECT", "OPTIONS", "https", "http", "a.example", "/3/device/ab", "*", "3", "0", "trailers", "u=1, i",
        ]
        for n in 0..<1500 {
            var fields: [([UInt8], [UInt8])] = []
            if rng.next() % 3 != 0 { fields = Self.base.shuffled(using: &rng).prefix(Int(rng.next() % 5)).map { $0 } }
            for _ in 0..<Int(rng.next() % 4) {
                let name = Self.b(names.randomElement(using: &rng)!)
                var value: [UInt8]
                if rng.next() % 2 == 0 {
                    value = Self.b(values.randomElement(using: &rng)!)
                } else {
                    value = (0..<Int(rng.next() % 20)).map { _ in alphabet.randomElement(using: &rng)! }
                }
                fields.insert((name, value), at: Int(rng.next() % UInt64(fields.count + 1)))
            }
            var r = RawRequest(fields: fields)
            if rng.next() % 2 == 0 { r.body = Array(repeating: 0x62, count: Int(rng.next() % 5)) }
            if rng.next() % 5 == 0 {
                r.trailers = [(Self.b(names.randomElement(using: &rng)!), Self.b(values.randomElement(using: &rng)!))]
            }
            r.ends = rng.next() % 10 != 0
            Self.expectSame(
                [RawRequest(fields: Self.base), r], "random case \(n): \(fields.map { (String(decoding: $0.0, as: UTF8.self), $0.1) })")
        }
    }

    /// The character classes against nghttp2's own functions, on strings made mostly of the
    /// bytes at the edges of each class (every length to 80, so the sixteen-byte scan, the
    /// eight-byte scan and their tails are all exercised); then every byte value at every place
    /// of values, paths and names shorter than a word (checked in one word filled with 'a')
    /// and around the eight- and sixteen-byte blocks' edges.
    @Test func characterClassesMatchNghttp2() {
        var rng = XorShift(state: 42)
        let edges: [UInt8] = [0x00, 0x08, 0x09, 0x0A, 0x0D, 0x1F, 0x20, 0x21, 0x22, 0x3A, 0x41, 0x5A, 0x61, 0x7A, 0x7E, 0x7F, 0x80, 0xFF]
        for len in [1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 24, 31, 32, 33, 47] {
            for at in 0..<len {
                for byte in 0...255 {
                    var v = [UInt8](repeating: UInt8(ascii: "a"), count: len)
                    v[at] = UInt8(byte)
                    v.withUnsafeBufferPointer { p in
                        #expect(HTTP2RequestCheck.isValue(p) == (nghttp2_check_header_value_rfc9113(p.baseAddress, len) != 0), "\(v)")
                        #expect(HTTP2RequestCheck.isPath(p) == (nghttp2_check_path(p.baseAddress, len) != 0), "\(v)")
                        if p[0] != UInt8(ascii: ":") {
                            let nghttp2 = nghttp2_check_header_name(p.baseAddress, len) != 0
                            #expect(HTTP2RequestCheck.isName(p.baseAddress!, len) == nghttp2, "\(v)")
                        }
                    }
                }
            }
        }
        for _ in 0..<20_000 {
            let len = Int(rng.next() % 81)
            var v = (0..<len).map { _ in UInt8(ascii: "a") }
            for _ in 0..<Int(rng.next() % 3) where len > 0 { v[Int(rng.next() % UInt64(len))] = edges.randomElement(using: &rng)! }
            if rng.next() % 4 == 0 && len > 0 { v[Int(rng.next() % UInt64(len))] = UInt8(truncatingIfNeeded: rng.next()) }
            v.withUnsafeBufferPointer { p in
                let n = p.count
                #expect(HTTP2RequestCheck.isValue(p) == (nghttp2_check_header_value_rfc9113(p.baseAddress, n) != 0), "\(v)")
                #expect(HTTP2RequestCheck.isPath(p) == (nghttp2_check_path(p.baseAddress, n) != 0), "\(v)")
                #expect(HTTP2RequestCheck.isAuthority(p) == (nghttp2_check_authority(p.baseAddress, n) != 0), "\(v)")
                #expect(HTTP2RequestCheck.isMethod(p) == (nghttp2_check_method(p.baseAddress, n) != 0), "\(v)")
                if n > 0 && p[0] != UInt8(ascii: ":") {
                    #expect(HTTP2RequestCheck.isName(p.baseAddress!, n) == (nghttp2_check_header_name(p.baseAddress, n) != 0), "\(v)")
                }
            }
        }
        for byte in 0...255 {
            let v = [UInt8(byte)]
            v.withUnsafeBufferPointer { p in
                #expect(HTTP2RequestCheck.isValue(p) == (nghttp2_check_header_value_rfc9113(p.baseAddress, 1) != 0))
                #expect(HTTP2RequestCheck.isPath(p) == (nghttp2_check_path(p.baseAddress, 1) != 0))
                if byte != 0x3A {
                    #expect(HTTP2RequestCheck.isName(p.baseAddress!, 1) == (nghttp2_check_header_name(p.baseAddress, 1) != 0))
                }
            }
        }
    }

    /// The eight-byte name test against its definition, for every byte at every place of a word
    /// of otherwise plain name bytes.
    @Test func plainNameWordsAreExactlyLettersAndDashes() {
        for base: UInt8 in [UInt8(ascii: "a"), UInt8(ascii: "-"), UInt8(ascii: "z")] {
            for at in 0..<8 {
                for byte in 0...255 {
                    var bytes = [UInt8](repeating: base, count: 8)
                    bytes[at] = UInt8(byte)
                    let w = bytes.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }
                    let plain = (byte >= 0x61 && byte <= 0x7A) || byte == 0x2D
                    #expect(HTTP2RequestCheck.plainName(w) == plain, "byte \(byte) at \(at)")
                }
            }
        }
    }

    @Test func contentLengthParsesAsNghttp2Does() {
        let cases: [(String, Int64)] = [
            ("0", 0), ("3", 3), ("0012", 12), ("9223372036854775807", Int64.max), ("9223372036854775808", -1), ("", -1), ("-1", -1),
            ("+1", -1), ("1 ", -1), ("1a", -1),
        ]
        for (s, want) in cases {
            #expect(Array(s.utf8).withUnsafeBufferPointer { HTTP2RequestCheck.parseUInt($0) } == want, "\(s)")
        }
    }
}
