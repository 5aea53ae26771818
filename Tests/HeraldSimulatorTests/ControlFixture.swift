import Foundation
import HeraldCore
import HeraldCrypto
import HeraldNet
import HeraldSimulator

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A real simulator on 127.0.0.1:0 with fresh files, its control interface on another free
/// port, and two clients: plain HTTP for the control port, and `curl --http2` for APNs.
final class ControlFixture: @unchecked Sendable {
    // @unchecked: every property is set in init and never changed.
    let dir: String
    let files: SimulatorFiles
    let sim: APNSSimulator
    let control: SimulatorControl

    init(configure: (inout SimulatorConfig) -> Void = { _ in }) throws {
        dir = NSTemporaryDirectory() + "herald-simctl-\(UUID().uuidString)"
        files = try SimulatorFiles.prepare(directory: dir)
        var c = try files.config()
        c.listen = HostPort(host: "127.0.0.1", port: 0)
        c.control = nil
        configure(&c)
        sim = try APNSSimulator(config: c, logger: .discard)
        control = try SimulatorControl(simulator: sim, listen: HostPort(host: "127.0.0.1", port: 0), logger: .discard)
    }

    deinit {
        control.stop()
        sim.shutdown()
        try? FileManager.default.removeItem(atPath: dir)
    }

    struct Reply {
        var status: Int
        var headers: [String: String]
        var json: JSON?
    }

    /// One request to the control port, synchronously.
    func call(_ method: String, _ path: String, body: String? = nil) throws -> Reply {
        var r = URLRequest(url: URL(string: "http://127.0.0.1:\(control.address.port)\(path)")!)
        r.httpMethod = method
        if let body {
            r.httpBody = Data(body.utf8)
            r.setValue("application/json", forHTTPHeaderField: "content-type")
        }
        let done = DispatchSemaphore(value: 0)
        let box = ResultBox()
        URLSession.shared.dataTask(with: r) { data, response, error in
            box.set(data, response as? HTTPURLResponse, error)
            done.signal()
        }.resume()
        done.wait()
        let (data, response, error) = box.get()
        guard let response else { throw error ?? URLError(.badServerResponse) }
        var headers: [String: String] = [:]
        for (k, v) in response.allHeaderFields { if let k = k as? String, let v = v as? String { headers[k.lowercased()] = v } }
        let json = (data?.isEmpty ?? true) ? nil : try? JSON.parse(data!)
        return Reply(status: response.statusCode, headers: headers, json: json)
    }

    /// A provider token signed with the simulator's own .p8, as Herald would make it.
    func jwt() throws -> String {
        try APNSJWT.sign(
            keyID: files.keyID, teamID: files.teamID, issuedAt: Int64(Date().timeIntervalSince1970),
            key: P256PrivateKey(contentsOfFile: files.apnsKeyFile))
    }

    struct CurlResult {
        var status: Int
        var headers: [String: String]
        var body: String
    }

    /// Apple's curl recipe: `curl --http2 --cacert … -H 'authorization: bearer …'` against
    /// the simulator's APNs port.
    func curl(_ path: String, headers: [String: String], body: String) throws -> CurlResult {
        let headerFile = dir + "/curl-headers-\(UUID().uuidString)"
        var args = [
            "-sS", "--http2", "--cacert", files.certificateFile, "-D", headerFile, "-X", "POST",
            "-H", "authorization: bearer \(try jwt())", "--data-binary", body,
        ]
        for (k, v) in headers.sorted(by: { $0.key < $1.key }) { args += ["-H", "\(k): \(v)"] }
        args.append("https://127.0.0.1:\(sim.address.port)\(path)")
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        p.arguments = args
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        let raw = (try? String(contentsOfFile: headerFile, encoding: .utf8)) ?? ""
        try? FileManager.default.removeItem(atPath: headerFile)
        var status = 0
        var hs: [String: String] = [:]
        for line in raw.split(whereSeparator: \.isNewline) {
            if line.hasPrefix("HTTP/") {
                status = Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
            } else if let colon = line.firstIndex(of: ":") {
                hs[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
        }
        return CurlResult(status: status, headers: hs, body: String(decoding: data, as: UTF8.self))
    }

    /// A Live Activity update to `token` through curl.
    func pushUpdate(_ token: String, timestamp: Int64, priority: Int = 10, bundle: String = "com.example.app") throws -> CurlResult {
        try curl(
            "/3/device/\(token)",
            headers: [
                "apns-topic": bundle + ".push-type.liveactivity", "apns-push-type": "liveactivity",
                "apns-priority": String(priority),
            ],
            body: #"{"aps":{"event":"update","timestamp":\#(timestamp),"content-state":{"score":1}}}"#)
    }
}

/// Carries a URLSession callback's values to the waiting thread.
final class ResultBox: @unchecked Sendable {
    // @unchecked: guarded by `lock`.
    private let lock = NSLock()
    private var value: (Data?, HTTPURLResponse?, (any Error)?) = (nil, nil, nil)
    func set(_ d: Data?, _ r: HTTPURLResponse?, _ e: (any Error)?) { lock.withLock { value = (d, r, e) } }
    func get() -> (Data?, HTTPURLResponse?, (any Error)?) { lock.withLock { value } }
}
