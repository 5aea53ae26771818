import CSystem
import Glibc

/// A request to send on an HTTP/2 client connection.
public struct HTTP2Request: Sendable {
    public var method: String
    public var path: String
    /// Fields other than the pseudo-headers (`:method`, `:scheme`, `:authority`, `:path`),
    /// typically shared by many requests.
    public var headers: HeaderList
    /// More fields of this request only (sent after `headers`).
    public var requestHeaders: HeaderList
    public var body: HTTP2Body?
    /// Keep the response's header fields even for a 2xx answer (they cost allocations on
    /// the hot path; error answers always keep them).
    public var keepResponseHeaders: Bool

    public init(
        method: String, path: String, headers: HeaderList = HeaderList(), requestHeaders: HeaderList = HeaderList(),
        body: HTTP2Body? = nil, keepResponseHeaders: Bool = true
    ) {
        self.method = method
        self.path = path
        self.headers = headers
        self.requestHeaders = requestHeaders
        self.body = body
        self.keepResponseHeaders = keepResponseHeaders
    }
}

/// A complete response.
public struct HTTP2Response: Sendable {
    public var status: Int
    public var headers: [(String, String)]
    public var body: [UInt8]

    public init(status: Int, headers: [(String, String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public func header(_ name: String) -> String? { headers.first { $0.0 == name }?.1 }
}

/// Why a stream ended without a response.
public enum HTTP2StreamFailure: Error, Sendable, Equatable {
    /// The peer did not process the stream (REFUSED_STREAM, or above a GOAWAY's
    /// last-stream-id): it can be sent again elsewhere without risk of a duplicate.
    case refused
    /// The peer reset the stream with this HTTP/2 error code; it may have been processed.
    case reset(UInt32)
    /// The connection ended with the stream open; it may have been processed.
    case connectionLost(String)
    /// No response within the stream deadline; the stream was reset.
    case timedOut

    /// True when the peer certainly did not process the request.
    public var unprocessed: Bool { self == .refused }
}

/// A field whose value is a fresh lower-case version-4 UUID (8-4-4-4-12), e.g. an
/// `apns-id` (reference §3.1). The connection writes it into a buffer of its own, so a
/// request carries two integers instead of an allocated string.
public struct HTTP2UUIDField: Sendable {
    public let name: StaticString
    /// The random bits; the version and variant bits are set when written.
    public let high: UInt64
    public let low: UInt64

    public init(name: StaticString, high: UInt64, low: UInt64) {
        self.name = name
        self.high = high
        self.low = low
    }

    /// Writes the UUID text (36 bytes) at `o`: eight hex digits at a time (the nibbles
    /// spread into bytes and turned into ASCII with a few word operations), where a loop
    /// per digit cost ~250 instructions per UUID in the simulator's answers.
    func write(to o: UnsafeMutablePointer<UInt8>) {
        let a = (high & 0xffff_ffff_ffff_0fff) | 0x0000_0000_0000_4000
        let b = (low & 0x3fff_ffff_ffff_ffff) | 0x8000_0000_0000_0000
        // The 32 digits, then the dashes between them: 8-4-4-4-12.
        var h: (UInt64, UInt64, UInt64, UInt64) = (
            Self.hex8(UInt32(truncatingIfNeeded: a >> 32)), Self.hex8(UInt32(truncatingIfNeeded: a)),
            Self.hex8(UInt32(truncatingIfNeeded: b >> 32)), Self.hex8(UInt32(truncatingIfNeeded: b))
        )
        withUnsafeBytes(of: &h) { d in
            let raw = UnsafeMutableRawPointer(o)
            raw.copyMemory(from: d.baseAddress!, byteCount: 8)
            o[8] = 45
            (raw + 9).copyMemory(from: d.baseAddress! + 8, byteCount: 4)
            o[13] = 45
            (raw + 14).copyMemory(from: d.baseAddress! + 12, byteCount: 4)
            o[18] = 45
            (raw + 19).copyMemory(from: d.baseAddress! + 16, byteCount: 4)
            o[23] = 45
            (raw + 24).copyMemory(from: d.baseAddress! + 20, byteCount: 12)
        }
    }

    /// The eight lower-case hex digits of `v`, most significant first, as the bytes of a
    /// word in memory order (stored as is, they read left to right on any byte order).
    @inline(__always)
    static func hex8(_ v: UInt32) -> UInt64 {
        var x = UInt64(v)
        x = (x | (x << 16)) & 0x0000_ffff_0000_ffff
        x = (x | (x << 8)) & 0x00ff_00ff_00ff_00ff
        x = (x | (x << 4)) & 0x0f0f_0f0f_0f0f_0f0f
        x = x.bigEndian  // the most significant nibble into the first byte in memory
        // 0-9 → '0'-'9'; 10-15 → 'a'-'f' (39 further on).
        let letters = ((x &+ 0x0606_0606_0606_0606) >> 4) & 0x0101_0101_0101_0101
        return x &+ 0x3030_3030_3030_3030 &+ letters &* 39
    }

    /// The UUID as text (tests, logs).
    public var text: String {
        let p = UnsafeMutablePointer<UInt8>.allocate(capacity: 36)
        defer { p.deallocate() }
        write(to: p)
        return String(decoding: UnsafeBufferPointer(start: p, count: 36), as: UTF8.self)
    }
}
