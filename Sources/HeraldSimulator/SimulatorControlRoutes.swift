import Foundation
import HeraldCore
import HeraldHTTPServer

/// Routes control requests to the simulator. Runs on libmicrohttpd's worker threads.
struct SimulatorControlRoutes: HTTPHandler {
    let simulator: APNSSimulator

    func handle(_ r: HTTPRequest) -> HTTPResponse {
        let path = r.path.count > 1 && r.path.hasSuffix("/") ? String(r.path.dropLast()) : r.path
        // Channel ids are base64 (`+`, `/`, `=`): take the id from the raw path, between
        // the fixed parts, so an encoded or a bare `/` both work.
        if r.rawPath.hasPrefix("/channels/"), r.rawPath.hasSuffix("/broadcasts") {
            let raw = r.rawPath.dropFirst("/channels/".count).dropLast("/broadcasts".count)
            guard let id = String(raw).removingPercentEncoding, !id.isEmpty else {
                return .error(400, code: "invalid_field", message: "the channel id is not validly percent-encoded")
            }
            return only("GET", r) { broadcasts(id) }
        }
        if r.rawPath.hasPrefix("/channels/") {
            let raw = r.rawPath.dropFirst("/channels/".count)
            guard let id = String(raw).removingPercentEncoding, !id.isEmpty else {
                return .error(400, code: "invalid_field", message: "the channel id is not validly percent-encoded")
            }
            return only("DELETE", r) {
                simulator.deleteChannel(id) ? HTTPResponse(status: 204) : .error(404, code: "not_found", message: "no channel \(id)")
            }
        }
        if path.hasPrefix("/tokens/") {
            let token = String(path.dropFirst("/tokens/".count))
            return only("GET", r) { pushes(token) }
        }
        switch path {
        case "/healthz": return only("GET", r) { .json(200, ["status": "ok"]) }
        case "/stats": return only("GET", r) { .json(200, simulator.stats().json) }
        case "/tokens": return only("GET", r) { tokens() }
        case "/channels":
            switch r.method {
            case "GET", "HEAD": return channels()
            case "POST": return plantChannels(r)
            default: return notAllowed("GET, POST")
            }
        case "/teams": return only("GET", r) { teams() }
        case "/faults":
            switch r.method {
            case "GET": return .json(200, ["spec": .string(simulator.faults.spec)])
            case "PUT": return putFaults(r)
            default: return notAllowed("GET, PUT")
            }
        case "/dead-tokens": return only("POST", r) { deadTokens(r) }
        case "/reset": return only("POST", r) { reset() }
        case "/goaway": return only("POST", r) { goAway(r) }
        case "/disconnect": return only("POST", r) { disconnect() }
        case "/settings": return only("PUT", r) { settings(r) }
        default: return .error(404, code: "not_found", message: "no control route \(r.method) \(r.path)")
        }
    }

    private func only(_ method: String, _ r: HTTPRequest, _ body: () -> HTTPResponse) -> HTTPResponse {
        r.method == method || (method == "GET" && r.method == "HEAD") ? body() : notAllowed(method)
    }

    private func notAllowed(_ allow: String) -> HTTPResponse {
        .error(405, code: "method_not_allowed", message: "this route takes \(allow)", headers: [("allow", allow)])
    }

    // MARK: - reads

    private func tokens() -> HTTPResponse {
        let counts = simulator.tokenCounts().mapValues { JSON.int(Int64($0)) }
        return .json(200, ["tokens": .object(counts)])
    }

    private func pushes(_ token: String) -> HTTPResponse {
        let list = simulator.pushes(to: token)
        return .json(200, ["token": .string(token.lowercased()), "pushes": .array(list.map(Self.json))])
    }

    private func channels() -> HTTPResponse {
        .json(200, ["channels": .object(simulator.channels().mapValues { JSON.int(Int64($0)) })])
    }

    private func teams() -> HTTPResponse {
        let t = simulator.teamTraffic()
        let connections = t.connections.mapValues { JSON.int(Int64($0)) }
        let requests = t.requests.mapValues { JSON.object($0.mapValues { JSON.int(Int64($0)) }) }
        return .json(
            200, ["connections": .object(connections), "requests": .object(requests), "mismatches": .int(Int64(t.mismatches))])
    }

    private func broadcasts(_ id: String) -> HTTPResponse {
        let list = simulator.broadcasts(on: id)
        if list.isEmpty && simulator.channels()[id] == nil {
            return .error(404, code: "not_found", message: "no channel \(id) and nothing broadcast on it")
        }
        return .json(200, ["channel": .string(id), "broadcasts": .array(list.map(Self.json))])
    }

    /// One push: its payload (parsed JSON, or the text when it is not JSON), priority, and
    /// the `aps.event` and `aps.timestamp` it carried, and when it arrived (`received_at`,
    /// seconds since 1970).
    static func json(_ p: LedgerPush) -> JSON {
        let payload = p.json ?? .string(String(decoding: p.payload, as: UTF8.self))
        return [
            "payload": payload, "priority": .int(Int64(p.priority)), "event": p.event.map(JSON.string) ?? .null,
            "timestamp": p.timestamp.map(JSON.int) ?? .null, "received_at": .double(p.receivedAt),
        ]
    }
}
