/// The RFC 9113 §8 rules a client session applies to a response, as nghttp2 1.52 applies
/// them with its HTTP messaging on (`nghttp2_http_on_header` → `http_response_on_header`,
/// `nghttp2_http_on_response_headers`, `nghttp2_http_on_trailer_headers`,
/// `nghttp2_http_on_data_chunk`, `nghttp2_http_on_remote_end_stream`), so that the client
/// can turn nghttp2's checks off and pay for them in the header callback it runs anyway:
/// the pool's answers are a `:status` and two ids, and nghttp2 checked each of their bytes
/// one at a time (`nghttp2_check_header_value` and `_name`, ~770 instructions per answer),
/// where `HTTP2RequestCheck.scan` takes sixteen at a time.
///
/// The server's twin (`HTTP2RequestCheck`), with the response's rules: `:status` (three
/// digits, once, before any regular field) is the only pseudo-header; a 1xx is not final,
/// another header block follows it; trailers end the stream; DATA never exceeds
/// `content-length`, and the stream ends on exactly that many bytes. Values are checked as
/// a request's are (`nghttp2_check_header_value_rfc9113`: no SP or HTAB at either end, no
/// control byte but HTAB inside, no DEL). Every violation has one outcome, what nghttp2
/// 1.52 does with no invalid-header callback installed: RST_STREAM(PROTOCOL_ERROR), and the
/// answer is never delivered. A pure value per stream, on the connection's loop.
struct HTTP2ResponseCheck {
    static let status: UInt8 = 1 << 0
    static let pseudoDisallowed: UInt8 = 1 << 1
    /// A 1xx came: the next header block is the response, not trailers.
    static let expectFinal: UInt8 = 1 << 2
    /// A check failed (the stream is being reset): no answer is delivered.
    static let malformed: UInt8 = 1 << 3

    private(set) var flags: UInt8 = 0
    /// The `:status` of the block being read (-1: none yet).
    private(set) var statusCode = -1
    /// `content-length` (-1: none), and the DATA bytes received so far.
    private(set) var contentLength: Int64 = -1
    private(set) var received: Int64 = 0

    init() {}

    var isMalformed: Bool { flags & Self.malformed != 0 }

    /// Marks the response malformed (its stream is being reset); returns false.
    private mutating func fail() -> Bool {
        flags |= Self.malformed
        return false
    }

    /// Whether a HEADERS block holds trailers. `laterBlock`: not the stream's first block
    /// (nghttp2's category `NGHTTP2_HCAT_HEADERS`, not `NGHTTP2_HCAT_RESPONSE`); a later
    /// block after a 1xx is the response itself.
    func isTrailer(laterBlock: Bool) -> Bool { laterBlock && flags & Self.expectFinal == 0 }

    /// What becomes of a field: handed to the application, taken out (a 204's
    /// `content-length: 0`, which nghttp2 removes), or the response is malformed.
    enum FieldOutcome { case keep, drop, malformed }

    /// One field of a header block (`trailer`: of trailers).
    @inline(__always)
    mutating func field(_ name: UnsafeBufferPointer<UInt8>, _ value: UnsafeBufferPointer<UInt8>, trailer: Bool) -> FieldOutcome {
        guard let n = name.baseAddress, name.count > 0 else { return malformed() }
        if n[0] == UInt8(ascii: ":") {
            // `:status`, once, first, not in trailers, three digits, not 101 (nghttp2's
            // `check_pseudo_header` then `parse_uint`: a blank value is refused, as any
            // non-digit is).
            guard !trailer, flags & (Self.pseudoDisallowed | Self.status) == 0, name.count == 7, name.bytesEqual(":status"),
                value.count == 3
            else { return malformed() }
            let code = HTTP2RequestCheck.parseUInt(value)
            guard code >= 0, code != 101 else { return malformed() }
            statusCode = Int(code)
            flags |= Self.status
            return .keep
        }
        guard HTTP2RequestCheck.isName(n, name.count), HTTP2RequestCheck.isValue(value) else { return malformed() }
        flags |= Self.pseudoDisallowed
        switch name.count {
        case 2 where name.bytesEqual("te"):
            guard HTTP2RequestCheck.equalsIgnoringCase(value, "trailers") else { return malformed() }
        case 7 where name.bytesEqual("upgrade"):
            return malformed()
        case 10 where name.bytesEqual("connection") || name.bytesEqual("keep-alive"):
            return malformed()
        case 14 where name.bytesEqual("content-length"):
            if statusCode == 204 {
                // Forbidden in a 204, but sent as "0" by widely used servers: nghttp2 takes
                // "0" once, and removes the field.
                guard contentLength == -1, value.count == 1, value[0] == UInt8(ascii: "0") else { return malformed() }
                contentLength = 0
                return .drop
            }
            guard statusCode / 100 != 1, contentLength == -1 else { return malformed() }
            contentLength = HTTP2RequestCheck.parseUInt(value)
            guard contentLength != -1 else { return malformed() }
        case 16 where name.bytesEqual("proxy-connection"):
            return malformed()
        case 17 where name.bytesEqual("transfer-encoding"):
            return malformed()
        default:
            break
        }
        return .keep
    }

    private mutating func malformed() -> FieldOutcome {
        _ = fail()
        return .malformed
    }

    /// A response header block ended (`nghttp2_http_on_response_headers`), and with it the
    /// stream when `endStream`. A 1xx waits for the final response; a 204 or 304 has no body.
    mutating func headersEnded(endStream: Bool) -> Bool {
        guard flags & Self.status != 0 else { return fail() }
        if statusCode / 100 == 1 {
            flags = Self.expectFinal
            contentLength = -1
            statusCode = -1
            return !endStream || fail()
        }
        flags &= ~Self.expectFinal
        if statusCode == 204 || statusCode == 304 { contentLength = 0 }
        return !endStream || ended()
    }

    /// Trailers ended: they must end the stream.
    mutating func trailersEnded(endStream: Bool) -> Bool { endStream ? ended() : fail() }

    /// DATA received: not before the final response, never more than `content-length`.
    mutating func data(_ count: Int) -> Bool {
        received += Int64(count)
        guard flags & Self.expectFinal == 0, contentLength == -1 || received <= contentLength else { return fail() }
        return true
    }

    /// The stream ended: a final response came, with exactly `content-length` bytes.
    mutating func ended() -> Bool {
        guard flags & Self.expectFinal == 0, contentLength == -1 || contentLength == received else { return fail() }
        return true
    }

}
