import HeraldCore

/// What a handler answers. The server frames it: `Content-Length` is always computed from
/// `body` (a `Content-Length` or `Transfer-Encoding` in `headers` is ignored), and for `HEAD`
/// libmicrohttpd sends the headers of this response without its body.
public struct HTTPResponse: Sendable {
    /// The status code, 200…999. Anything else is replaced by a 500 JSON error.
    public var status: Int
    /// Header fields in order, names as given. Values must not contain CR or LF and must not
    /// be empty (libmicrohttpd refuses them; the server then answers 500 instead).
    public var headers: [(String, String)]
    public var body: [UInt8]

    public init(status: Int, headers: [(String, String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// `value` encoded compactly with sorted keys, `content-type: application/json`.
    public static func json(_ status: Int, _ value: JSON, headers: [(String, String)] = []) -> HTTPResponse {
        HTTPResponse(
            status: status, headers: [("content-type", "application/json")] + headers, body: value.encoded())
    }

    /// `s` as UTF-8 with the given content type.
    public static func text(_ status: Int, _ s: String, contentType: String = "text/plain; charset=utf-8")
        -> HTTPResponse
    {
        HTTPResponse(status: status, headers: [("content-type", contentType)], body: Array(s.utf8))
    }

    /// No body (`Content-Length: 0`), no content type.
    public static func empty(_ status: Int) -> HTTPResponse {
        HTTPResponse(status: status)
    }

    /// The API's error shape, exactly `{"error":{"code":"<code>","message":"<message>"}}`,
    /// with `content-type: application/json`. `code` is a stable machine-readable word,
    /// `message` a human sentence.
    public static func error(_ status: Int, code: String, message: String, headers: [(String, String)] = [])
        -> HTTPResponse
    {
        json(status, ["error": ["code": .string(code), "message": .string(message)]], headers: headers)
    }

    /// The value of the first header named `name` (any case).
    public func header(_ name: String) -> String? {
        let n = name.lowercased()
        return headers.first { $0.0.lowercased() == n }?.1
    }
}
