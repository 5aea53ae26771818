import Foundation
import HeraldCore

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An answer from the Herald API.
struct APIReply: Sendable {
    var status: Int
    var headers: [String: String]
    /// The body parsed as JSON; nil when empty or not JSON.
    var json: JSON?
    var body: Data

    var isSuccess: Bool { (200..<300).contains(status) }

    /// `error.code` and `error.message` of Herald's error shape, when the body has it.
    var apiError: (code: String, message: String)? {
        guard let e = json?["error"], let code = e["code"]?.stringValue else { return nil }
        return (code, e["message"]?.stringValue ?? "")
    }
}

/// Talks to a running Herald server with one key. Every failure becomes a `CommandFailure`
/// whose message says what to do. Any thread.
final class AdminClient: Sendable {
    let server: URL
    let tokenSource: String
    private let token: String
    private let http: HTTPExchange

    init(server: URL, token: String, tokenSource: String, timeout: Double) {
        self.server = server
        self.token = token
        self.tokenSource = tokenSource
        http = HTTPExchange(timeout: timeout)
    }

    /// A path segment percent-encoded (channel ids and tokens go in paths).
    static func segment(_ s: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return s.addingPercentEncoding(withAllowedCharacters: allowed) ?? s
    }

    /// Sends one request; any HTTP status is returned. Throws `CommandFailure` when the
    /// server cannot be reached or does not answer in time.
    func exchange(
        _ method: String, _ path: String, query: String? = nil, body: JSON? = nil, headers: [String: String] = [:]
    ) throws -> APIReply {
        let text = server.absoluteString + path + (query.map { "?" + $0 } ?? "")
        guard let url = URL(string: text) else { throw CommandFailure("cannot form a URL from \(text)") }
        var r = URLRequest(url: url)
        r.httpMethod = method
        r.setValue("Bearer " + token, forHTTPHeaderField: "Authorization")
        r.setValue("application/json", forHTTPHeaderField: "Accept")
        r.setValue("herald-cli/\(HeraldCLI.version)", forHTTPHeaderField: "User-Agent")
        if let body {
            r.setValue("application/json", forHTTPHeaderField: "Content-Type")
            r.httpBody = Data(body.encoded())
        }
        for (k, v) in headers { r.setValue(v, forHTTPHeaderField: k) }
        let reply: HTTPReply
        do {
            reply = try http.perform(r)
        } catch {
            if error.timedOut {
                throw CommandFailure(
                    "no answer from the Herald server at \(server.absoluteString) within \(Self.seconds(http.timeout)) "
                        + "(--timeout). Is `herald serve` running there? Use --server or HERALD_SERVER.")
            }
            throw CommandFailure(
                "cannot reach the Herald server at \(server.absoluteString) (\(error.detail)). "
                    + "Is `herald serve` running? Use --server or HERALD_SERVER.")
        }
        let json = reply.body.isEmpty ? nil : try? JSON.parse(reply.body)
        return APIReply(status: reply.status, headers: reply.headers, json: json, body: reply.body)
    }

    /// `exchange`, then a `CommandFailure` for any status outside 2xx. Returns the JSON
    /// body (`.null` when there is none).
    @discardableResult
    func call(
        _ method: String, _ path: String, query: String? = nil, body: JSON? = nil, headers: [String: String] = [:]
    ) throws -> JSON {
        let reply = try exchange(method, path, query: query, body: body, headers: headers)
        guard reply.isSuccess else { throw failure(reply) }
        return reply.json ?? .null
    }

    /// The message for an error answer: the server's own words, its code and status, and
    /// for 401/403 what to check.
    func failure(_ reply: APIReply) -> CommandFailure {
        let (code, message) =
            reply.apiError ?? ("", "unexpected answer: " + String(String(decoding: reply.body.prefix(200), as: UTF8.self)))
        let tag = code.isEmpty ? "HTTP \(reply.status)" : "HTTP \(reply.status) \(code)"
        var retry = ""
        if let ra = reply.headers["retry-after"] { retry = "; retry after \(ra) s" }
        switch reply.status {
        case 401:
            return CommandFailure(
                "the server refused the token from \(tokenSource) (\(tag): \(message)). Check HERALD_ADMIN_TOKEN / --token, "
                    + "or the token file `herald serve` wrote beside its database.")
        case 403:
            return CommandFailure(
                "the token from \(tokenSource) is not allowed to do this (\(tag): \(message)). Admin verbs need an admin key; "
                    + "publish needs a publisher key for the channel, subs a subscriber key.")
        default:
            return CommandFailure("\(message) (\(tag)\(retry))")
        }
    }

    static func seconds(_ s: Double) -> String {
        s == s.rounded() ? "\(Int(s)) s" : "\(s) s"
    }
}
