import Foundation
import Synchronization

@testable import HeraldAPNS
@testable import HeraldCore
@testable import HeraldCrypto
@testable import HeraldNet
@testable import HeraldSender
@testable import HeraldSimulator

/// A simulator on 127.0.0.1:0 with fresh files, and pools pointed at it.
final class SimFixture: @unchecked Sendable {
    let dir: String
    let files: SimulatorFiles
    var sim: APNSSimulator
    let metrics = MetricsRegistry()

    init(configure: (inout SimulatorConfig) -> Void = { _ in }) throws {
        dir = NSTemporaryDirectory() + "herald-sim-\(UUID().uuidString)"
        files = try SimulatorFiles.prepare(directory: dir)
        var c = try files.config()
        c.listen = HostPort(host: "127.0.0.1", port: 0)
        c.control = nil
        configure(&c)
        sim = try APNSSimulator(config: c, logger: .discard)
    }

    /// Restarts the simulator on the same port (ledger and channels start empty).
    func restart(configure: (inout SimulatorConfig) -> Void = { _ in }) throws {
        let port = sim.address.port
        sim.shutdown()
        var c = try files.config()
        c.listen = HostPort(host: "127.0.0.1", port: port)
        c.control = nil
        configure(&c)
        sim = try APNSSimulator(config: c, logger: .discard)
    }

    func credentials() throws -> APNSCredentials {
        APNSCredentials(keyID: files.keyID, teamID: files.teamID, key: try P256PrivateKey(contentsOfFile: files.apnsKeyFile))
    }

    func pool(
        connections: Int = 1, clock: WallClock = SystemClock(), jwt: JWTProvider? = nil,
        configure: (inout APNSPoolConfig) -> Void = { _ in }
    ) throws -> (APNSClientPool, JWTProvider) {
        var c = APNSPoolConfig(target: HostPort(host: "127.0.0.1", port: sim.address.port))
        c.caFile = files.certificateFile
        c.connections = connections
        c.retry = RetryPolicy(maxAttempts: 6, backoff: Backoff(base: 0.01, cap: 0.1))
        c.reconnect = Backoff(base: 0.01, cap: 0.2)
        configure(&c)
        let provider = try jwt ?? JWTProvider(credentials: credentials(), clock: clock, logger: .discard)
        return (try APNSClientPool(config: c, jwt: provider, logger: .discard, metrics: metrics), provider)
    }

    deinit {
        sim.shutdown()
        try? FileManager.default.removeItem(atPath: dir)
    }
}

/// Collects results; `wait(for:)` blocks until that many arrived.
final class ResultCollector: APNSResultSink, @unchecked Sendable {
    let lock = NSCondition()
    var results: [Int: APNSResult] = [:]
    var attempts: [Int: Int] = [:]

    func apnsCompleted(_ request: APNSRequest, result: APNSResult) {
        lock.lock()
        results[request.index] = result
        attempts[request.index] = request.attempts
        lock.broadcast()
        lock.unlock()
    }

    @discardableResult
    func wait(for n: Int, timeout: Double = 60) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        lock.lock()
        defer { lock.unlock() }
        while results.count < n { if !lock.wait(until: deadline) { return results.count >= n } }
        return true
    }

    func outcomes() -> [Int: APNSResult] {
        lock.lock()
        defer { lock.unlock() }
        return results
    }
}

/// A Live Activity update payload for tests.
func updatePayload(_ ts: Int64, score: Int = 0) -> [UInt8] {
    JSON.object(["aps": .object(["event": "update", "timestamp": .int(ts), "content-state": .object(["score": .int(Int64(score))])])]).encoded()
}

/// A template for token pushes of one event to bundle `com.example.app`.
func tokenTemplate(_ sink: APNSResultSink, body: [UInt8], priority: Int = 10, bundle: String = "com.example.app") -> APNSTemplate {
    APNSTemplate(
        headers: HeaderList(APNSRequests.tokenPushFields(bundleID: bundle, priority: priority, expiration: nil)),
        body: HTTP2Body(body), sink: sink)
}

/// `n` distinct 32-byte hex tokens.
func makeTokens(_ n: Int, seed: UInt64 = 1) -> [String] {
    var g = FastRandom(seed: seed)
    return (0..<n).map { _ in
        var b = [UInt8](repeating: 0, count: 32)
        for i in 0..<4 {
            let v = g.next()
            for k in 0..<8 { b[i * 8 + k] = UInt8(truncatingIfNeeded: v >> (8 * UInt64(k))) }
        }
        return Hex.encode(b)
    }
}

func requests(_ tokens: [String], _ template: APNSTemplate) -> [APNSRequest] {
    tokens.enumerated().map { i, t in
        var h = HeaderList()
        h.append("apns-id", Identifiers.lowercaseUUID(), noIndex: true)
        return APNSRequest(path: APNSRequests.tokenPath(t), headers: h, template: template, index: i)
    }
}
