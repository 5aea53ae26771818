import Foundation
import HeraldAPNS
import HeraldCore
import HeraldCrypto
import HeraldNet
import HeraldSender
import HeraldSimulator

/// A simulator on 127.0.0.1:0 with fresh files, and pools pointed at it.
public final class SimFixture: @unchecked Sendable {
    public let dir: String
    public let files: SimulatorFiles
    public var sim: APNSSimulator
    public let metrics = MetricsRegistry()

    public init(configure: (inout SimulatorConfig) -> Void = { _ in }) throws {
        dir = NSTemporaryDirectory() + "herald-sim-\(UUID().uuidString)"
        files = try SimulatorFiles.prepare(directory: dir)
        var c = try files.config()
        c.listen = HostPort(host: "127.0.0.1", port: 0)
        c.control = nil
        configure(&c)
        sim = try APNSSimulator(config: c, logger: .discard)
    }

    /// Restarts the simulator on the same port (ledger and channels start empty).
    public func restart(configure: (inout SimulatorConfig) -> Void = { _ in }) throws {
        let port = sim.address.port
        sim.shutdown()
        var c = try files.config()
        c.listen = HostPort(host: "127.0.0.1", port: port)
        c.control = nil
        configure(&c)
        sim = try APNSSimulator(config: c, logger: .discard)
    }

    public func credentials() throws -> APNSCredentials {
        APNSCredentials(keyID: files.keyID, teamID: files.teamID, key: try P256PrivateKey(contentsOfFile: files.apnsKeyFile))
    }

    public func pool(
        connections: Int = 1, clock: WallClock = SystemClock(), jwt: JWTProvider? = nil, withoutJWT: Bool = false,
        configure: (inout APNSPoolConfig) -> Void = { _ in }
    ) throws -> (APNSClientPool, JWTProvider) {
        var c = APNSPoolConfig(target: HostPort(host: "127.0.0.1", port: sim.address.port))
        c.caFile = files.certificateFile
        c.connections = connections
        c.retry = RetryPolicy(maxAttempts: 6, backoff: Backoff(base: 0.01, cap: 0.1))
        c.reconnect = Backoff(base: 0.01, cap: 0.2)
        configure(&c)
        let provider = try jwt ?? JWTProvider(credentials: credentials(), clock: clock, logger: .discard)
        return (try APNSClientPool(config: c, jwt: withoutJWT ? nil : provider, logger: .discard, metrics: metrics), provider)
    }

    deinit {
        sim.shutdown()
        try? FileManager.default.removeItem(atPath: dir)
    }
}

/// Collects results; `wait(for:)` blocks until that many arrived.
public final class ResultCollector: APNSResultSink, @unchecked Sendable {
    public init() {}
    let lock = NSCondition()
    public var results: [Int: APNSResult] = [:]
    public var attempts: [Int: Int] = [:]

    public func apnsCompleted(_ request: APNSRequest, result: APNSResult) {
        lock.lock()
        results[request.index] = result
        attempts[request.index] = request.attempts
        lock.broadcast()
        lock.unlock()
    }

    @discardableResult
    public func wait(for n: Int, timeout: Double = 60) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        lock.lock()
        defer { lock.unlock() }
        while results.count < n { if !lock.wait(until: deadline) { return results.count >= n } }
        return true
    }

    public func outcomes() -> [Int: APNSResult] {
        lock.lock()
        defer { lock.unlock() }
        return results
    }
}

/// A Live Activity update payload for tests.
public func updatePayload(_ ts: Int64, score: Int = 0) -> [UInt8] {
    JSON.object(["aps": .object(["event": "update", "timestamp": .int(ts), "content-state": .object(["score": .int(Int64(score))])])])
        .encoded()
}

/// A template for token pushes of one event to bundle `com.example.app`.
public func tokenTemplate(_ sink: APNSResultSink, body: [UInt8], priority: Int = 10, bundle: String = "com.example.app") -> APNSTemplate {
    APNSTemplate(
        headers: HeaderList(APNSRequests.tokenPushFields(bundleID: bundle, priority: priority, expiration: nil)),
        body: HTTP2Body(body), sink: sink)
}

/// `n` distinct 32-byte hex tokens.
public func makeTokens(_ n: Int, seed: UInt64 = 1) -> [String] {
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

public func requests(_ tokens: [String], _ template: APNSTemplate) -> [APNSRequest] {
    tokens.enumerated().map { i, t in
        var h = HeaderList()
        h.append("apns-id", Identifiers.lowercaseUUID(), noIndex: true)
        return APNSRequest(path: APNSRequests.tokenPath(t), headers: h, template: template, index: i)
    }
}
