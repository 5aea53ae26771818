import HeraldCore
import HeraldHTTPServer

/// The control routes that change the simulator.
extension SimulatorControlRoutes {
    /// The body as a JSON object; an empty body is `{}`. The error response otherwise.
    func object(_ r: HTTPRequest) -> Result<[String: JSON], ControlRefusal> {
        if r.body.isEmpty { return .success([:]) }
        guard let json = try? JSON.parse(r.body) else {
            return .failure(ControlRefusal(.error(400, code: "invalid_json", message: "the body is not valid JSON")))
        }
        guard let o = json.objectValue else {
            return .failure(ControlRefusal(.error(400, code: "invalid_body", message: "the body must be a JSON object")))
        }
        return .success(o)
    }

    func putFaults(_ r: HTTPRequest) -> HTTPResponse {
        let o: [String: JSON]
        switch object(r) {
        case .success(let v): o = v
        case .failure(let e): return e.response
        }
        guard let spec = o["spec"]?.stringValue else {
            return .error(400, code: "missing_field", message: "give {\"spec\":\"500=0.05,latency-ms=5,...\"}")
        }
        switch SimulatorFaults.parse(spec) {
        case .success(let f):
            simulator.setFaults(f)
            return .json(200, ["spec": .string(f.spec)])
        case .failure(let e):
            return .error(400, code: "invalid_field", message: e.description)
        }
    }

    func deadTokens(_ r: HTTPRequest) -> HTTPResponse {
        let o: [String: JSON]
        switch object(r) {
        case .success(let v): o = v
        case .failure(let e): return e.response
        }
        guard let list = o["tokens"]?.arrayValue else {
            return .error(400, code: "missing_field", message: "give {\"tokens\":[\"<hex>\",...],\"since_ms\":<optional>}")
        }
        let tokens = list.compactMap(\.stringValue)
        guard tokens.count == list.count else {
            return .error(422, code: "invalid_field", message: "tokens must be an array of hex strings")
        }
        var since: Int64?
        if let s = o["since_ms"], s != .null {
            guard let v = s.intValue, v >= 0 else {
                return .error(422, code: "invalid_field", message: "since_ms must be milliseconds since 1970")
            }
            since = v
        }
        simulator.markDead(tokens, sinceMillis: since)
        return .json(200, ["marked": .int(Int64(tokens.count))])
    }

    /// `POST /channels {"bundle_id","count"?,"storage_policy"?}`: orphans planted behind
    /// the client's back.
    func plantChannels(_ r: HTTPRequest) -> HTTPResponse {
        let o: [String: JSON]
        switch object(r) {
        case .success(let v): o = v
        case .failure(let e): return e.response
        }
        guard let bundle = o["bundle_id"]?.stringValue, !bundle.isEmpty else {
            return .error(400, code: "missing_field", message: "give {\"bundle_id\":\"com.example.app\",\"count\":1,\"storage_policy\":0}")
        }
        let count = o["count"]?.intValue ?? 1
        let policy = o["storage_policy"]?.intValue ?? 0
        guard (1...10_000).contains(count), policy == 0 || policy == 1 else {
            return .error(422, code: "invalid_field", message: "count must be 1…10000 and storage_policy 0 or 1")
        }
        guard let ids = simulator.plantChannels(bundleID: bundle, count: Int(count), storagePolicy: Int(policy)) else {
            return .error(422, code: "invalid_field", message: "that many would pass the channel cap of the bundle")
        }
        return .json(201, ["channels": .array(ids.map(JSON.string))])
    }

    func reset() -> HTTPResponse {
        simulator.resetLedger()
        return .json(200, ["reset": true])
    }

    func goAway(_ r: HTTPRequest) -> HTTPResponse {
        let o: [String: JSON]
        switch object(r) {
        case .success(let v): o = v
        case .failure(let e): return e.response
        }
        let reason = o["reason"]?.stringValue ?? "Shutdown"
        simulator.goAwayAll(reason: reason)
        return .json(200, ["goaway": .string(reason)])
    }

    func disconnect() -> HTTPResponse {
        simulator.disconnectAll()
        return .json(200, ["disconnected": true])
    }

    func settings(_ r: HTTPRequest) -> HTTPResponse {
        let o: [String: JSON]
        switch object(r) {
        case .success(let v): o = v
        case .failure(let e): return e.response
        }
        guard let n = o["max_concurrent_streams"]?.intValue else {
            return .error(400, code: "missing_field", message: "give {\"max_concurrent_streams\":N}")
        }
        guard (0...Int64(Int32.max)).contains(n) else {
            return .error(422, code: "invalid_field", message: "max_concurrent_streams must be 0…2147483647")
        }
        simulator.setMaxConcurrentStreams(UInt32(n))
        return .json(200, ["max_concurrent_streams": .int(n)])
    }
}

/// A refusal computed while reading a request.
struct ControlRefusal: Error {
    let response: HTTPResponse
    init(_ response: HTTPResponse) { self.response = response }
}
