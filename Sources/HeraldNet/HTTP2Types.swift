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
