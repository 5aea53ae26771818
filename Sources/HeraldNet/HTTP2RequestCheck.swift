import CNghttp2
import Glibc

/// The RFC 9113 §8 rules a server session applies to a request, as nghttp2 1.52 applies them
/// with its HTTP messaging on (`nghttp2_http_on_header`, `nghttp2_http_on_request_headers`,
/// `nghttp2_http_on_data_chunk`, `nghttp2_http_on_remote_end_stream`), so that the server can
/// turn nghttp2's own checks off (`nghttp2_option_set_no_http_messaging`) and pay for them
/// once, in the header callback that copies the field anyway.
///
/// A pure value per stream: each event returns whether the request is still well formed;
/// `false` means what nghttp2 does for a malformed request, RST_STREAM(PROTOCOL_ERROR) and the
/// request is never handed over. With no invalid-header callback installed, nghttp2 1.52
/// treats a regular field it would "ignore" (a bad character) the same way
/// (`session_call_on_invalid_header` returns `NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE`), so
/// every violation here has that one outcome.
///
/// The character classes are nghttp2's own tables (`nghttp2_check_header_name`,
/// `nghttp2_check_header_value_rfc9113`, `nghttp2_check_method`, `nghttp2_check_path`,
/// `nghttp2_check_authority`), read once from the library byte by byte; values are scanned
/// eight bytes at a time, falling back to the table only for a word that holds a byte below
/// 0x21 or 0x7F. Not `Sendable`-relevant: it lives in a stream, on the connection's loop.
struct HTTP2RequestCheck {
    // nghttp2's NGHTTP2_HTTP_FLAG_* that matter for a request.
    static let method: UInt16 = 1 << 0
    static let path: UInt16 = 1 << 1
    static let scheme: UInt16 = 1 << 2
    static let authority: UInt16 = 1 << 3
    static let host: UInt16 = 1 << 4
    static let pseudoDisallowed: UInt16 = 1 << 5
    static let schemeHTTP: UInt16 = 1 << 6
    static let pathRegular: UInt16 = 1 << 7
    static let pathAsterisk: UInt16 = 1 << 8
    static let methodOptions: UInt16 = 1 << 9
    static let methodConnect: UInt16 = 1 << 10
    static let priority: UInt16 = 1 << 11
    static let badPriority: UInt16 = 1 << 12

    private(set) var flags: UInt16 = 0
    /// `content-length` (-1: none), and the DATA bytes received so far.
    private(set) var contentLength: Int64 = -1
    private(set) var received: Int64 = 0
    /// The `priority` field's value when one came (RFC 9218; applied by the session when the
    /// header block ends, as nghttp2 does for a server without RFC 7540 priorities).
    private(set) var urgency: UInt8 = 3
    private(set) var incremental = false

    init() {}

    /// One field of the request's header block (`trailer`: of a later HEADERS frame): what
    /// it is (the request keeps it by that, without telling the names apart again), or
    /// `.malformed`.
    @inline(__always)
    mutating func field(_ name: UnsafeBufferPointer<UInt8>, _ value: UnsafeBufferPointer<UInt8>, trailer: Bool) -> HTTP2FieldKind {
        guard let n = name.baseAddress, name.count > 0 else { return .malformed }
        if n[0] == UInt8(ascii: ":") {
            return pseudoField(name, value, trailer: trailer)
        }
        return regularField(name, value, trailer: trailer) ? .regular : .malformed
    }

    @inline(__always)
    private mutating func regularField(_ name: UnsafeBufferPointer<UInt8>, _ value: UnsafeBufferPointer<UInt8>, trailer: Bool) -> Bool {
        let n = name.baseAddress!
        guard Self.isName(n, name.count) else { return false }
        flags |= Self.pseudoDisallowed
        // The names nghttp2 has a rule for (its tokens), told apart by length first.
        switch name.count {
        case 2 where name.bytesEqual("te"):
            return Self.isValue(value) && Self.equalsIgnoringCase(value, "trailers")
        case 4 where name.bytesEqual("host"):
            guard Self.isAuthority(value), flags & Self.host == 0, value.count > 0 else { return false }
            flags |= Self.host
            return true
        case 7 where name.bytesEqual("upgrade"):
            return false
        case 8 where name.bytesEqual("priority"):
            guard Self.isValue(value) else { return false }
            if !trailer && flags & Self.badPriority == 0 {
                // `parse` leaves both untouched when it fails.
                if HTTP2Priority.parse(value, urgency: &urgency, incremental: &incremental) {
                    flags |= Self.priority
                } else {
                    flags = (flags & ~Self.priority) | Self.badPriority
                }
            }
            return true
        case 10 where name.bytesEqual("connection") || name.bytesEqual("keep-alive"):
            return false
        case 14 where name.bytesEqual("content-length"):
            guard Self.isValue(value), contentLength == -1 else { return false }
            contentLength = Self.parseUInt(value)
            return contentLength != -1
        case 16 where name.bytesEqual("proxy-connection"):
            return false
        case 17 where name.bytesEqual("transfer-encoding"):
            return false
        default:
            return Self.isValue(value)
        }
    }

    private mutating func pseudoField(
        _ name: UnsafeBufferPointer<UInt8>, _ value: UnsafeBufferPointer<UInt8>, trailer: Bool
    ) -> HTTP2FieldKind {
        guard !trailer, flags & Self.pseudoDisallowed == 0, name.count > 1 else { return .malformed }
        // Once per flag, never empty (nghttp2's `check_pseudo_header`).
        func once(_ flag: UInt16) -> Bool {
            guard flags & flag == 0, value.count > 0 else { return false }
            flags |= flag
            return true
        }
        switch name.count {
        case 5 where name.bytesEqual(":path"):
            guard Self.isPath(value), once(Self.path) else { return .malformed }
            if value[0] == UInt8(ascii: "/") {
                flags |= Self.pathRegular
            } else if value.count == 1 && value[0] == UInt8(ascii: "*") {
                flags |= Self.pathAsterisk
            }
            return .path
        case 7 where name.bytesEqual(":method"):
            guard Self.isMethod(value), once(Self.method) else { return .malformed }
            if value.bytesEqual("CONNECT") {
                flags |= Self.methodConnect
            } else if value.bytesEqual("OPTIONS") {
                flags |= Self.methodOptions
            }
            return .method
        case 7 where name.bytesEqual(":scheme"):
            // "https" as every client sends it, without the general checks.
            if value.bytesEqual("https") {
                guard once(Self.scheme) else { return .malformed }
                flags |= Self.schemeHTTP
                return .scheme
            }
            guard Self.isScheme(value), once(Self.scheme) else { return .malformed }
            if Self.equalsIgnoringCase(value, "http") || Self.equalsIgnoringCase(value, "https") { flags |= Self.schemeHTTP }
            return .scheme
        case 10 where name.bytesEqual(":authority"):
            return Self.isAuthority(value) && once(Self.authority) ? .authority : .malformed
        default:
            // `:protocol` (no SETTINGS_ENABLE_CONNECT_PROTOCOL sent), `:status`, any other.
            return .malformed
        }
    }

    /// The request's header block ended (`nghttp2_http_on_request_headers`), and with it the
    /// stream when `endStream`.
    func headersEnded(endStream: Bool) -> Bool {
        if flags & Self.methodConnect != 0 {
            // CONNECT (no `:protocol`: refused above): `:authority`, no `:scheme`, no `:path`.
            guard flags & (Self.scheme | Self.path) == 0, flags & Self.authority != 0 else { return false }
            // nghttp2 forgets a CONNECT's content-length.
            return true
        }
        let required = Self.method | Self.path | Self.scheme
        guard flags & required == required, flags & (Self.authority | Self.host) != 0 else { return false }
        // An http(s) `:path` starts with "/", or is "*" for OPTIONS.
        if flags & Self.schemeHTTP != 0 && flags & Self.pathRegular == 0
            && !(flags & Self.methodOptions != 0 && flags & Self.pathAsterisk != 0)
        {
            return false
        }
        return !endStream || ended()
    }

    /// A later HEADERS frame (trailers) ended: it must end the stream.
    func trailersEnded(endStream: Bool) -> Bool { endStream && ended() }

    /// DATA received: never more than `content-length`.
    mutating func data(_ count: Int) -> Bool {
        received += Int64(count)
        return effectiveContentLength == -1 || received <= effectiveContentLength
    }

    /// The stream ended (END_STREAM on DATA or HEADERS): exactly `content-length` received.
    func ended() -> Bool { effectiveContentLength == -1 || effectiveContentLength == received }

    private var effectiveContentLength: Int64 { flags & Self.methodConnect != 0 ? -1 : contentLength }

    // MARK: - characters

    static func equalsIgnoringCase(_ b: UnsafeBufferPointer<UInt8>, _ s: StaticString) -> Bool {
        guard b.count == s.utf8CodeUnitCount else { return false }
        for i in 0..<b.count {
            let c = b[i]
            let lower = c >= 65 && c <= 90 ? c + 32 : c
            if lower != s.utf8Start[i] { return false }
        }
        return true
    }

    /// nghttp2's `parse_uint`: digits only, at least one, no overflow of Int64; -1 otherwise.
    static func parseUInt(_ b: UnsafeBufferPointer<UInt8>) -> Int64 {
        guard !b.isEmpty else { return -1 }
        var n: Int64 = 0
        for c in b {
            guard c >= 48 && c <= 57 else { return -1 }
            let (m, o1) = n.multipliedReportingOverflow(by: 10)
            let (s, o2) = m.addingReportingOverflow(Int64(c - 48))
            if o1 || o2 { return -1 }
            n = s
        }
        return n
    }

    /// nghttp2's character tables (one byte per byte value, non-zero: allowed), read from
    /// the library once: a name's characters after its optional leading ':' (checked with a
    /// letter before it; nghttp2 rejects ":" alone and an empty name, handled by the
    /// callers), a value's, a method's, a path's, an authority's.
    struct Tables: @unchecked Sendable {  // written once, before any use; read-only after
        static let name = 0
        static let value = 256
        static let method = 512
        static let path = 768
        static let authority = 1024
        let bytes: UnsafeMutablePointer<UInt8>

        init() {
            bytes = .allocate(capacity: 5 * 256)
            for b in 0..<256 {
                var c = UInt8(b)
                let pair: [UInt8] = [UInt8(ascii: "a"), c]
                bytes[Self.name + b] = pair.withUnsafeBufferPointer { nghttp2_check_header_name($0.baseAddress, 2) } != 0 ? 1 : 0
                bytes[Self.value + b] = nghttp2_check_header_value(&c, 1) != 0 ? 1 : 0
                bytes[Self.method + b] = nghttp2_check_method(&c, 1) != 0 ? 1 : 0
                bytes[Self.path + b] = nghttp2_check_path(&c, 1) != 0 ? 1 : 0
                bytes[Self.authority + b] = nghttp2_check_authority(&c, 1) != 0 ? 1 : 0
            }
        }
    }
    static let tables = Tables()

    /// True when every byte of `p[0..<n]` is allowed by `table`.
    @inline(__always)
    static func all(_ table: UnsafePointer<UInt8>, _ p: UnsafePointer<UInt8>, _ n: Int) -> Bool {
        for i in 0..<n where table[Int(p[i])] == 0 { return false }
        return true
    }

    /// A regular name's characters (nghttp2's table): eight bytes at a time when they are all
    /// lower-case letters or '-' (the names clients send; a name shorter than a word is one
    /// word filled with 'a'), the table for any other word.
    @inline(__always)
    static func isName(_ p: UnsafePointer<UInt8>, _ n: Int) -> Bool {
        words(p, n, Tables.name, plain: plainName)
    }

    /// True when every byte of `p[0..<n]` is allowed by the table at `table` (a `Tables`
    /// offset): eight bytes at a time (the last word overlapping the one before; fewer than
    /// eight in one word filled with 'a', which every class allows), a word that `plain`
    /// passes without looking at the table; the table for any other word. The tables (a
    /// lazy global: a `swift_once` per access) are read only then, not per field.
    @inline(__always)
    static func words(_ p: UnsafePointer<UInt8>, _ n: Int, _ table: Int, plain: (UInt64) -> Bool) -> Bool {
        guard n >= 8 else { return plain(shortWord(p, n)) || all(tables.bytes + table, p, n) }
        let raw = UnsafeRawPointer(p)
        var i = 0
        while true {
            let at = min(i, n - 8)
            if !plain(raw.loadUnaligned(fromByteOffset: at, as: UInt64.self)) && !all(tables.bytes + table, p + at, 8) { return false }
            if at == n - 8 { return true }
            i += 8
        }
    }

    /// The `n` bytes at `p` (fewer than eight) in a word whose other bytes are 'a'.
    @inline(__always)
    static func shortWord(_ p: UnsafePointer<UInt8>, _ n: Int) -> UInt64 {
        var w: UInt64 = 0x6161_6161_6161_6161
        withUnsafeMutableBytes(of: &w) { b in
            for i in 0..<n { b[i] = p[i] }
        }
        return w
    }

    /// True when every byte of `w` is 'a'...'z' or '-' (exact per byte: no byte is 0x80 or
    /// above, so no sum below carries into the next byte).
    @inline(__always)
    static func plainName(_ w: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        guard w & highs == 0 else { return false }
        let fromA = (w &+ ones &* (0x80 - 0x61)) & highs
        let pastZ = (w &+ ones &* (0x80 - 0x7B)) & highs
        let x = w ^ (ones &* 0x2D)
        let dash = ~(((x & ~highs) &+ ~highs) | x) & highs
        return (fromA & ~pastZ) | dash == highs
    }

    /// `nghttp2_check_header_value_rfc9113`: no leading or trailing SP/HTAB, no NUL, CR, LF,
    /// other control byte or DEL.
    @inline(__always)
    static func isValue(_ v: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let p = v.baseAddress, v.count > 0 else { return true }
        let first = p[0]
        let last = p[v.count - 1]
        if first == 0x20 || first == 0x09 || last == 0x20 || last == 0x09 { return false }
        return scan(p, v.count, below: 0x20, Tables.value)
    }

    /// `nghttp2_check_path`: the value characters minus SP and HTAB.
    @inline(__always)
    static func isPath(_ v: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let p = v.baseAddress else { return true }
        return scan(p, v.count, below: 0x21, Tables.path)
    }

    static func isMethod(_ v: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let p = v.baseAddress, v.count > 0 else { return false }
        return all(tables.bytes + Tables.method, p, v.count)
    }

    static func isAuthority(_ v: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let p = v.baseAddress else { return true }
        return all(tables.bytes + Tables.authority, p, v.count)
    }

    /// nghttp2's `check_scheme`: a letter, then letters, digits, '+', '-', '.'.
    static func isScheme(_ v: UnsafeBufferPointer<UInt8>) -> Bool {
        guard !v.isEmpty else { return false }
        func letter(_ c: UInt8) -> Bool { (c >= 65 && c <= 90) || (c >= 97 && c <= 122) }
        guard letter(v[0]) else { return false }
        for c in v.dropFirst() where !(letter(c) || (c >= 48 && c <= 57) || c == 43 || c == 45 || c == 46) { return false }
        return true
    }

    /// True when every byte is in the table at `table` (a `Tables` offset), one that holds
    /// every byte from `below` to 0x7E and from 0x80 up: sixteen bytes at a time (one vector
    /// compare each; the last sixteen overlapping the ones before) from sixteen bytes on,
    /// eight at a time (`words`) below that; the table only for a block with a byte under
    /// `below` or a DEL.
    @inline(__always)
    static func scan(_ p: UnsafePointer<UInt8>, _ n: Int, below: UInt8, _ table: Int) -> Bool {
        if n >= 16 {
            let raw = UnsafeRawPointer(p)
            let low = SIMD16<UInt8>(repeating: below)
            let del = SIMD16<UInt8>(repeating: 0x7F)
            var i = 0
            while true {
                let at = min(i, n - 16)
                let v = raw.loadUnaligned(fromByteOffset: at, as: SIMD16<UInt8>.self)
                // Unsigned: bytes from 0x80 up pass, as the table lets them.
                if any((v .< low) .| (v .== del)) && !all(tables.bytes + table, p + at, 16) { return false }
                if at == n - 16 { return true }
                i += 16
            }
        }
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        let low = ones &* UInt64(below)
        let del = ones &* 0x7F
        return words(p, n, table) { w in
            // No byte under `below`, none equal to 0x7F (exact as a test of the whole word).
            let under = (w &- low) & ~w & highs
            let x = w ^ del
            let isDel = (x &- ones) & ~x & highs
            return under | isDel == 0
        }
    }
}

/// What a request's field is to the server: a pseudo-header it keeps (by which one), a
/// regular field, a pseudo-header it does not keep (`.ignored`: only when nghttp2 checks
/// the request), or malformed.
enum HTTP2FieldKind: UInt8 {
    case regular, method, path, scheme, authority, ignored, malformed
}
