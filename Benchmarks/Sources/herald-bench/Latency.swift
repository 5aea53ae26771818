import Foundation
import HeraldCore

/// Publish→first push: for each event, the time from sending the publish to the moment
/// the simulator accepted the push for the channel's one device (the simulator stamps
/// arrivals; both clocks are this machine's). Prints p50/p99/max in ms. With `--while URL`
/// (another event's progress), samples are taken only while that event is queued or
/// sending: a sample that the other event's end overtook is dropped and the run stops.
func runLatency(_ opts: [String: String]) {
    guard let api = opts["api"].flatMap(URL.init(string:)), let token = opts["token"],
        let sim = opts["sim-control"].flatMap(URL.init(string:)), let channel = opts["channel"], let device = opts["device"]
    else { fail("latency needs --api --token --sim-control --channel --device") }
    let events = Int(opts["events"] ?? "200") ?? 200
    let label = opts["label"] ?? "idle"
    let client = Client(token: token)
    let simClient = Client(token: nil)
    let tokenURL = sim.appendingPathComponent("tokens").appendingPathComponent(device)
    func pushes() -> [JSON] {
        let (_, d) = simClient.call("GET", tokenURL)
        return (try? JSON.parse(d))?["pushes"]?.arrayValue ?? []
    }
    let whileURL = opts["while"].flatMap(URL.init(string:))
    func loaded() -> Bool {
        guard let u = whileURL else { return true }
        let (_, d) = client.call("GET", u)
        let state = (try? JSON.parse(d))?["state"]?.stringValue
        return state == "queued" || state == "sending"
    }
    guard loaded() else { fail("the event of --while is not running") }
    let before = pushes().count
    var latencies: [Double] = []
    let eventsURL = api.appendingPathComponent("v1/channels/\(channel)/events")
    for i in 0..<events {
        let body = JSON.object(["aps": .object(["event": "update", "content-state": .object(["n": .int(Int64(i))])]), "priority": 10])
            .encoded()
        let t0 = SystemClock().now()
        let (status, d) = client.call("POST", eventsURL, body: Data(body))
        guard status == 202 else { fail("publish answered \(status): \(String(decoding: d, as: UTF8.self))") }
        var got: [JSON] = []
        let deadline = Date(timeIntervalSinceNow: 10)
        repeat {
            got = pushes()
            if got.count > before + i { break }
            usleep(500)
        } while Date() < deadline
        guard got.count > before + i, let at = got[before + i]["received_at"]?.numberValue else { fail("event \(i) never arrived") }
        latencies.append((at - t0) * 1000)
        if !loaded() {
            latencies.removeLast()
            break
        }
        usleep(5_000)
    }
    let s = latencies.sorted()
    guard !s.isEmpty else { fail("no sample taken") }
    print("publish_samples_\(label)=\(s.count)")
    print(String(format: "publish_p50_%@_ms=%.1f", label, percentile(s, 0.5)))
    print(String(format: "publish_p99_%@_ms=%.1f", label, percentile(s, 0.99)))
    print(String(format: "publish_max_%@_ms=%.1f", label, s.last ?? 0))
}

/// Registry ingest through the batch route: the tokens of FILE in batches of N, from
/// `clients` concurrent connections. Prints tokens/s.
func runIngest(_ opts: [String: String]) {
    guard let api = opts["api"].flatMap(URL.init(string:)), let token = opts["token"], let channel = opts["channel"],
        let file = opts["file"]
    else { fail("ingest needs --api --token --channel --file") }
    let batch = Int(opts["batch"] ?? "10000") ?? 10_000
    let clients = Int(opts["clients"] ?? "2") ?? 2
    guard let text = try? String(contentsOfFile: file, encoding: .utf8) else { fail("cannot read \(file)") }
    let tokens = text.split(separator: "\n").map(String.init)
    // Bodies are made before the clock starts: the figure is the server's.
    let bodies: [Data] = stride(from: 0, to: tokens.count, by: batch).map { start in
        let part = tokens[start..<min(start + batch, tokens.count)]
        return Data(("{\"subscribe\":[\"" + part.joined(separator: "\",\"") + "\"]}").utf8)
    }
    let url = api.appendingPathComponent("v1/channels/\(channel)/subscriptions:batch")
    let next = NSLock()
    nonisolated(unsafe) var index = 0
    let t0 = Monotonic.seconds()
    DispatchQueue.concurrentPerform(iterations: clients) { _ in
        let client = Client(token: token)
        while true {
            next.lock()
            let k = index
            index += 1
            next.unlock()
            guard k < bodies.count else { return }
            let (status, d) = client.call("POST", url, body: bodies[k])
            if status != 200 { fail("batch answered \(status): \(String(decoding: d, as: UTF8.self))") }
        }
    }
    let seconds = Monotonic.seconds() - t0
    print("ingest_tokens=\(tokens.count)")
    print(String(format: "ingest_seconds=%.2f", seconds))
    print(String(format: "ingest_batch_route_tokens_per_s=%.0f", Double(tokens.count) / seconds))
}
