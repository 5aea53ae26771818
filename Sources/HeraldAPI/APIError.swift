import HeraldAPNS
import HeraldCore
import HeraldHTTPServer
import HeraldStore

/// An error that renders itself as an HTTP answer (style §9): status, stable code, a
/// sentence for people, and a closed-set label for metrics.
public struct APIError: Error, Sendable {
    public var status: Int
    public var code: String
    public var message: String
    public var headers: [(String, String)] = []

    public init(_ status: Int, _ code: String, _ message: String, headers: [(String, String)] = []) {
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers
    }

    public var response: HTTPResponse { .error(status, code: code, message: message, headers: headers) }

    static func notFound(_ what: String) -> APIError { APIError(404, "not_found", what) }
    static func invalid(_ field: String, _ why: String) -> APIError { APIError(422, "invalid_field", "'\(field)' \(why)") }
    static func missing(_ field: String) -> APIError { APIError(422, "missing_field", "'\(field)' is required") }
    static let unauthorized = APIError(
        401, "unauthorized", "a valid API key is required: send it as 'Authorization: Bearer <key>'",
        headers: [("www-authenticate", "Bearer realm=\"herald\"")])
    static func forbidden(_ why: String) -> APIError { APIError(403, "forbidden", why) }

    init(_ e: StoreError) {
        self.init(e.status, e.code, e.description)
        if e.status == 503 { headers = [("retry-after", "1")] }
    }

    init(_ e: PayloadError) { self.init(e.status, e.code, e.message) }
}
