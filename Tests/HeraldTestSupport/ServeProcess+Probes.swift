import Foundation
import HeraldCore

/// What the fault tests read from a running `herald serve` child: a raw-socket client on
/// its API, its `/metrics`, its memory, and event progress.
extension ServeProcess {
    /// The child's process id.
    public var pid: Int32 { process.processIdentifier }

    /// A plain HTTP/1.1 client on the child's API address (one connection per request).
    public var client: APIClient {
        APIClient(host: api?.host ?? "127.0.0.1", port: UInt16(api?.port ?? 0))
    }

    /// One request with the admin token over a fresh connection, status and headers
    /// included. Throws `APIClientError` when no answer came.
    @discardableResult
    public func send(_ method: String, _ target: String, json: JSON? = nil, headers: [(String, String)] = []) throws -> APIResponse {
        try client.send(method, target, token: adminToken, json: json, headers: headers)
    }

    /// `GET /metrics`, parsed. Throws `APIClientError` when no answer came.
    public func metrics() throws -> PrometheusSample {
        PrometheusSample(try client.send("GET", "/metrics").text)
    }

    /// Resident memory of the child (`VmRSS`) and its anonymous part (`RssAnon`: the heap,
    /// without mapped files such as the database's mmap), in bytes; nil once it exited.
    public var memory: (rss: Int, anon: Int)? {
        guard let s = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        func field(_ name: String) -> Int? {
            guard let line = s.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }) else { return nil }
            return line.split(separator: " ").dropFirst().first.flatMap { Int($0) }.map { $0 * 1024 }
        }
        guard let rss = field("VmRSS"), let anon = field("RssAnon") else { return nil }
        return (rss, anon)
    }

    /// Polls `GET /v1/channels/{channel}/events/{id}` until `condition` holds on its JSON,
    /// and returns that JSON; nil when `timeout` passed first (the last answer is lost).
    public func waitEvent(
        _ channel: String, _ id: String, timeout: Double, until condition: (JSON) -> Bool = ServeProcess.isFinal
    ) throws -> JSON? {
        var last: JSON?
        let ok = try Poll.until(timeout: timeout, interval: 0.02) {
            last = try send("GET", "/v1/channels/\(channel)/events/\(id)").json
            return last.map(condition) ?? false
        }
        return ok ? last : nil
    }

    /// An event JSON in a final state (`done`, `superseded`, `failed`).
    public static func isFinal(_ e: JSON) -> Bool {
        ["done", "superseded", "failed"].contains(e["state"]?.stringValue ?? "")
    }
}
