/// One complete HTTP/1.1 request as the handler sees it: headers parsed by libmicrohttpd,
/// body fully received (never more than `HTTPServerConfig.maxBodyBytes`).
public struct HTTPRequest: Sendable {
    /// The method as sent (`GET`, `POST`, …); libmicrohttpd does not change its case.
    public var method: String
    /// The URL path without the query, **percent-decoded by libmicrohttpd**
    /// (`MHD_http_unescape`: every `%XX` is decoded, `+` is left as is). `%2F` therefore
    /// becomes `/`; route on `rawPath` when that matters. A path containing `%00` is refused
    /// with 400 before any handler runs, so `path` never hides a truncation.
    public var path: String
    /// The path exactly as the client sent it (still percent-encoded), without the query.
    public var rawPath: String
    /// Everything after the first `?` of the request target, undecoded; "" when absent.
    public var rawQuery: String
    /// The query arguments as libmicrohttpd decodes them (`+` → space, `%XX` decoded). A key
    /// without `=` maps to "". When a key repeats, the first value wins; read `rawQuery`
    /// for the others.
    public var query: [String: String]
    /// Request headers with lower-cased names; a repeated header's values are joined with
    /// ", " in the order received.
    public var headers: [String: String]
    /// The complete request body (empty when none was sent).
    public var body: [UInt8]
    /// The peer's IP address in numeric form (`127.0.0.1`, `::1`), without the port; "" when
    /// libmicrohttpd does not know it.
    public var remoteAddress: String

    /// Builds a request by hand (for handler tests that run without a socket).
    public init(
        method: String, path: String, rawPath: String? = nil, rawQuery: String = "",
        query: [String: String] = [:], headers: [String: String] = [:], body: [UInt8] = [],
        remoteAddress: String = ""
    ) {
        self.method = method
        self.path = path
        self.rawPath = rawPath ?? path
        self.rawQuery = rawQuery
        self.query = query
        self.headers = Dictionary(
            headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { a, b in a + ", " + b })
        self.body = body
        self.remoteAddress = remoteAddress
    }

    /// The value of the header `name` (any case), or nil when the request did not carry it.
    public func header(_ name: String) -> String? {
        headers[name.lowercased()]
    }
}
