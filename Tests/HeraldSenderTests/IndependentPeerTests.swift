import Foundation
import HeraldTestSupport
import Testing

@testable import HeraldAPNS
@testable import HeraldCore
@testable import HeraldCrypto
@testable import HeraldSimulator

/// Runs a command; returns its exit status and combined output.
func run(_ exe: String, _ args: [String]) throws -> (Int32, String) {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: exe)
    p.arguments = args
    let pipe = Pipe()
    p.standardOutput = pipe
    p.standardError = pipe
    try p.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    return (p.terminationStatus, String(decoding: data, as: UTF8.self))
}

@Suite struct IndependentPeerTests {
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/h2load"), "h2load (nghttp2-client) is not installed"))
    func h2loadLoadsTheSimulatorAndEveryRequestIsAccepted() throws {
        // h2load opens its streams before it reads SETTINGS, so it does not follow APNs'
        // one-stream-until-authenticated rule: the simulator lets it in from the start.
        let fx = try SimFixture { $0.streamsBeforeAuth = 1000 }
        let creds = try fx.credentials()
        let jwt = try APNSJWT.sign(keyID: creds.keyID, teamID: creds.teamID, issuedAt: SystemClock().nowSeconds(), key: creds.key)
        let body = fx.dir + "/payload.json"
        try Data(updatePayload(1_767_225_600)).write(to: URL(fileURLWithPath: body))
        let token = makeTokens(1, seed: 41)[0]
        let (status, out) = try run(
            "/usr/bin/h2load",
            [
                "-n", "5000", "-c", "2", "-m", "100", "-d", body,
                "-H", "authorization: bearer \(jwt)", "-H", "apns-push-type: liveactivity",
                "-H", "apns-topic: com.example.app.push-type.liveactivity", "-H", "apns-priority: 5",
                "https://127.0.0.1:\(fx.sim.address.port)/3/device/\(token)",
            ])
        #expect(status == 0, "\(out)")
        #expect(out.contains("5000 succeeded, 0 failed, 0 errored"), "\(out)")
        #expect(out.contains("status codes: 5000 2xx"), "\(out)")
        #expect(fx.sim.pushes(to: token).count == 5000)
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/curl"), "curl is not installed"))
    func curlPushesAsInApplesRecipeAndSeesAPNsErrors() throws {
        let fx = try SimFixture()
        let creds = try fx.credentials()
        let jwt = try APNSJWT.sign(keyID: creds.keyID, teamID: creds.teamID, issuedAt: SystemClock().nowSeconds(), key: creds.key)
        let token = makeTokens(1, seed: 42)[0]
        func curl(_ headers: [String], _ data: String) throws -> String {
            var args = ["-s", "--http2", "--cacert", fx.files.certificateFile, "-o", "-", "-w", "\n%{http_code}", "--data", data]
            for h in headers { args += ["-H", h] }
            args.append("https://127.0.0.1:\(fx.sim.address.port)/3/device/\(token)")
            return try run("/usr/bin/curl", args).1
        }
        let ok = try curl(
            ["apns-topic: com.example.app.push-type.liveactivity", "apns-push-type: liveactivity", "authorization: bearer \(jwt)"],
            #"{"aps":{"timestamp":1767225600,"event":"update","content-state":{"home":1}}}"#)
        #expect(ok.hasSuffix("200"), "\(ok)")
        #expect(fx.sim.pushes(to: token).first?.event == "update")
        // Forgetting the Live Activity topic suffix is refused like APNs does.
        let bad = try curl(["apns-topic: com.example.app", "apns-push-type: liveactivity", "authorization: bearer \(jwt)"], "{}")
        #expect(bad.hasSuffix("400") && bad.contains("BadTopic"), "\(bad)")
    }
}
