import Foundation
import HeraldCore

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `herald serve` as a child process (the built binary), pointed at a simulator: for tests
/// that kill it. Its stderr is kept; the API address is read from its start-up log line.
public final class ServeProcess: @unchecked Sendable {
    public let process = Process()
    public let db: String
    public private(set) var api: URL?
    private let errPipe = Pipe()
    private let lock = NSCondition()
    private var log = ""

    /// The `herald` executable built next to the test bundle.
    public static var binary: String {
        let bundle = Bundle.main.bundleURL
        var dir = bundle.deletingLastPathComponent()
        if bundle.pathExtension != "xctest" { dir = bundle }
        let candidate = dir.appendingPathComponent("herald").path
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../.build/debug/herald").standardized
            .path
    }

    /// Starts `herald serve` on 127.0.0.1:0 with `db`, talking to `sim`; waits until it
    /// listens (throws after `timeout`). `removingEnv` drops variables after `extraEnv` is
    /// applied (the single-key ones, for a teams file).
    public init(
        db: String, sim: SimFixture, extraEnv: [String: String] = [:], removingEnv: [String] = [], timeout: Double = 30
    ) throws {
        self.db = db
        process.executableURL = URL(fileURLWithPath: Self.binary)
        process.arguments = ["serve", "--listen", "127.0.0.1:0", "--db", db, "--log-level", "info"]
        var env = ProcessInfo.processInfo.environment
        env["HERALD_APNS_HOST"] = "127.0.0.1:\(sim.sim.address.port)"
        env["HERALD_APNS_CA_FILE"] = sim.files.certificateFile
        env["HERALD_APNS_KEY_FILE"] = sim.files.apnsKeyFile
        env["HERALD_APNS_KEY_ID"] = sim.files.keyID
        env["HERALD_APNS_TEAM_ID"] = sim.files.teamID
        env["SWIFT_BACKTRACE"] = "enable=no"
        for (k, v) in extraEnv { env[k] = v }
        for k in removingEnv { env[k] = nil }
        process.environment = env
        process.standardError = errPipe
        process.standardOutput = FileHandle.nullDevice
        errPipe.fileHandleForReading.readabilityHandler = { [weak self] h in
            let d = h.availableData
            guard let self, !d.isEmpty else { return }
            self.lock.lock()
            self.log += String(decoding: d, as: UTF8.self)
            self.lock.broadcast()
            self.lock.unlock()
        }
        try process.run()
        let deadline = Date(timeIntervalSinceNow: timeout)
        lock.lock()
        defer { lock.unlock() }
        while api == nil {
            if let line = log.split(separator: "\n").first(where: { $0.contains("\"herald.started\"") }),
                let j = try? JSON.parse(String(line)), let a = j["api"]?.stringValue
            {
                api = URL(string: a)
                break
            }
            if !process.isRunning || !lock.wait(until: deadline) {
                throw NSError(
                    domain: "ServeProcess", code: 1,
                    userInfo: [
                        NSLocalizedDescriptionKey: "herald serve (\(Self.binary)) did not start (running: \(process.isRunning)):\n\(log)"
                    ])
            }
        }
    }

    /// Everything the process wrote to stderr so far.
    public var output: String {
        lock.lock()
        defer { lock.unlock() }
        return log
    }

    /// The admin token `serve` wrote beside the database.
    public var adminToken: String {
        (try? String(contentsOfFile: db + ".admin-token", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
    }

    /// SIGKILL: no chance to clean up.
    public func kill() {
        Glibc.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// SIGTERM and wait.
    public func stop() {
        guard process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }

    deinit { if process.isRunning { kill() } }

    /// One API call with the admin token; returns status and JSON.
    public func call(_ method: String, _ path: String, _ body: JSON? = nil) throws -> (status: Int, json: JSON?) {
        guard let api else { throw NSError(domain: "ServeProcess", code: 2) }
        var r = URLRequest(url: api.appendingPathComponent(path))
        r.httpMethod = method
        r.setValue("Bearer " + adminToken, forHTTPHeaderField: "Authorization")
        if let body {
            r.setValue("application/json", forHTTPHeaderField: "Content-Type")
            r.httpBody = Data(body.encoded())
        }
        r.timeoutInterval = 30
        let done = DispatchSemaphore(value: 0)
        let result = ResultBox()
        URLSession.shared.dataTask(with: r) { data, resp, err in
            result.set(data, (resp as? HTTPURLResponse)?.statusCode, err)
            done.signal()
        }.resume()
        done.wait()
        let (data, status, err) = result.get()
        if let err { throw err }
        return (status ?? 0, data.flatMap { $0.isEmpty ? nil : try? JSON.parse($0) })
    }

    final class ResultBox: @unchecked Sendable {
        let l = NSLock()
        var v: (Data?, Int?, Error?) = (nil, nil, nil)
        func set(_ d: Data?, _ s: Int?, _ e: Error?) {
            l.lock()
            v = (d, s, e)
            l.unlock()
        }
        func get() -> (Data?, Int?, Error?) {
            l.lock()
            defer { l.unlock() }
            return v
        }
    }
}
