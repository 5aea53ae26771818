import Foundation
import HeraldCore
import HeraldTestSupport
import Testing

/// The assembled product under attack: the built `herald serve` binary (ServeProcess) on
/// 127.0.0.1:0 talking to an APNs simulator, with HTTP limits set through its own
/// environment variables, plus a well-behaved client to check it still serves others.
final class ServedHerald {
    let sim: SimFixture
    let serve: ServeProcess
    let port: UInt16
    let admin: String
    let client: APIClient

    /// `env`: HERALD_HTTP_TIMEOUT, HERALD_HTTP_MAX_CONNECTIONS, HERALD_HTTP_THREADS, ...
    init(env: [String: String] = [:]) throws {
        sim = try SimFixture()
        admin = "hk_admin_hostile_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        var e = env
        e["HERALD_ADMIN_TOKEN"] = admin
        serve = try ServeProcess(db: sim.dir + "/herald.db", sim: sim, extraEnv: e)
        port = UInt16(try #require(serve.api?.port))
        client = APIClient(host: "127.0.0.1", port: port, timeout: 10)
    }

    deinit { serve.stop() }

    /// The server process is still running.
    var isAlive: Bool { serve.process.isRunning }

    /// A well-behaved request and how long its answer took (seconds).
    func timed(_ method: String, _ target: String, json: JSON? = nil, token: Bool = true) throws -> (APIResponse, Double) {
        let start = Date()
        let r = try client.send(method, target, token: token ? admin : nil, json: json)
        return (r, Date().timeIntervalSince(start))
    }

    /// Creates a fanout channel; `#require`s 201.
    func createChannel(_ id: String) throws {
        let r = try client.send(
            "POST", "/v1/channels", token: admin,
            json: ["id": .string(id), "bundle_id": "com.example.app", "mode": "fanout", "environment": "sandbox"])
        try #require(r.status == 201, "create channel: \(r.status) \(r.text)")
    }

    /// Descriptors the server process holds open (/proc), to see connections really go.
    var openDescriptors: Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(serve.process.processIdentifier)/fd").count) ?? -1
    }

    /// Polls `condition` every 20 ms until it holds or `timeout` passes.
    static func eventually(timeout: Double, _ condition: () -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while !condition() {
            if Date() > deadline { return false }
            usleep(20_000)
        }
        return true
    }
}

/// The hostile-input suites share CPU-bound bounds, so they run one at a time.
@Suite(.serialized) enum Hostile {}
