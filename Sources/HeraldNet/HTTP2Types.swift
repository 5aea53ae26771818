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

    private static let digits: StaticString = "0123456789abcdef"

    /// Writes the UUID text (36 bytes) at `o`.
    func write(to o: UnsafeMutablePointer<UInt8>) {
        let a = (high & 0xffff_ffff_ffff_0fff) | 0x0000_0000_0000_4000
        let b = (low & 0x3fff_ffff_ffff_ffff) | 0x8000_0000_0000_0000
        // "0123456789abcdef" by nibble: a load per digit, no branch.
        let digits = Self.digits.utf8Start
        @inline(__always) func put(_ v: UInt64, _ nibbles: Int, at start: Int) {
            var x = v
            var i = start + nibbles - 1
            while i >= start {
                o[i] = digits[Int(truncatingIfNeeded: x & 0xf)]
                x >>= 4
                i -= 1
            }
        }
        put(a >> 32, 8, at: 0)
        o[8] = 45
        put((a >> 16) & 0xffff, 4, at: 9)
        o[13] = 45
        put(a & 0xffff, 4, at: 14)
        o[18] = 45
        put(b >> 48, 4, at: 19)
        o[23] = 45
        put(b & 0xffff_ffff_ffff, 12, at: 24)
    }

    /// The UUID as text (tests, logs).
    public var text: String {
        let p = UnsafeMutablePointer<UInt8>.allocate(capacity: 36)
        defer { p.deallocate() }
        write(to: p)
        return String(decoding: UnsafeBufferPointer(start: p, count: 36), as: UTF8.self)
    }
}
