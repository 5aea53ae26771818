import Foundation
import HeraldTestSupport
import Testing

@testable import HeraldCore
@testable import HeraldCrypto
@testable import HeraldSimulator

/// The simulator's checks of a token push's fields (reference §3.1), over the wire with
/// curl (an independent HTTP/2 client): each field wrong on its own gets APNs' status and
/// reason, and the counts the simulator reports match the answers curl saw.
@Suite struct SimulatorFieldChecksTests {
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/curl"), "curl is not installed"))
    func eachFieldIsCheckedAsAPNsDoesAndEveryAnswerIsCounted() throws {
        let fx = try SimFixture()
        let creds = try fx.credentials()
        let jwt = try APNSJWT.sign(keyID: creds.keyID, teamID: creds.teamID, issuedAt: SystemClock().nowSeconds(), key: creds.key)
        let token = makeTokens(1, seed: 7)[0]
        let body = #"{"aps":{"timestamp":1767225600,"event":"update","content-state":{"home":1}}}"#
        let base = ["apns-topic: com.example.app.push-type.liveactivity", "apns-push-type: liveactivity", "authorization: bearer \(jwt)"]
        /// Status code line last; headers (-D -) and body before it.
        func curl(_ headers: [String], _ data: String = body, device: String = token) throws -> String {
            var args = [
                "-s", "--http2", "--cacert", fx.files.certificateFile, "-D", "-", "-o", "-", "-w", "\n%{http_code}", "--data", data,
            ]
            for h in headers { args += ["-H", h] }
            args.append("https://127.0.0.1:\(fx.sim.address.port)/3/device/\(device)")
            return try run("/usr/bin/curl", args).1
        }
        let id = "8c6d2a3e-5b1f-4c9a-9e7d-0a1b2c3d4e5f"
        let cases: [(headers: [String], data: String, device: String, status: Int, reason: String?)] = [
            (base, body, token, 200, nil),
            (base + ["apns-priority: 5", "apns-expiration: 0", "apns-id: \(id)"], body, token, 200, nil),
            (base + ["apns-topic: com.example.app.push-type.liveactivity"], body, token, 400, "DuplicateHeaders"),
            (base + ["x-trace: 1", "x-trace: 2"], body, token, 400, "DuplicateHeaders"),
            (Array(base.dropFirst()), body, token, 400, "MissingTopic"),
            ([base[0], "apns-push-type: carrier-pigeon", base[2]], body, token, 400, "InvalidPushType"),
            ([base[0], "apns-push-type: alert", base[2], "apns-priority: 1"], body, token, 200, nil),
            (base + ["apns-priority: 1"], body, token, 400, "BadPriority"),
            (base + ["apns-priority: 7"], body, token, 400, "BadPriority"),
            (base + ["apns-expiration: -1"], body, token, 400, "BadExpirationDate"),
            (base + ["apns-id: \(id.uppercased())"], body, token, 400, "BadMessageId"),
            (base + ["apns-collapse-id: \(String(repeating: "c", count: 65))"], body, token, 400, "BadCollapseId"),
            (base, "", token, 400, "PayloadEmpty"),
            (base, String(repeating: "x", count: 4097), token, 413, "PayloadTooLarge"),
            (Array(base.prefix(2)), body, token, 403, "MissingProviderToken"),
            (base, body, "zz", 400, "BadDeviceToken"),
            (base, body, token.uppercased(), 200, nil),
        ]
        for c in cases {
            let out = try curl(c.headers, c.data, device: c.device)
            #expect(out.hasSuffix("\n\(c.status)"), "\(c.headers) → \(out)")
            if let reason = c.reason {
                #expect(out.contains(#"{"reason":"\#(reason)"}"#), "\(c.headers) → \(out)")
            }
            // Every answer carries an apns-id: the request's own when it sent a valid one.
            #expect(out.lowercased().contains("apns-id: "), "\(out)")
            if c.headers.contains("apns-id: \(id)") { #expect(out.contains("apns-id: \(id)")) }
        }
        // An upper-case token is the same device as its lower-case form.
        #expect(fx.sim.pushes(to: token).count == 4)
        // Counted per connection and published before each answer left: exact once curl has it.
        let stats = fx.sim.stats()
        #expect(stats.requests == cases.count)
        #expect(stats.accepted == 4)
        #expect(stats.responses[200] == 4)
        #expect(stats.responses[400] == cases.count - 6)
        #expect(stats.responses[413] == 1)
        #expect(stats.responses[403] == 1)
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/curl"), "curl is not installed"))
    func withoutTheLedgerPushesAreCountedNotRecorded() throws {
        let fx = try SimFixture { $0.recordLedger = false }
        let creds = try fx.credentials()
        let jwt = try APNSJWT.sign(keyID: creds.keyID, teamID: creds.teamID, issuedAt: SystemClock().nowSeconds(), key: creds.key)
        let tokens = makeTokens(3, seed: 8)
        for t in tokens {
            let out = try run(
                "/usr/bin/curl",
                [
                    "-s", "--http2", "--cacert", fx.files.certificateFile, "-o", "/dev/null", "-w", "%{http_code}", "--data", "{}",
                    "-H", "apns-topic: com.example.app.push-type.liveactivity", "-H", "apns-push-type: liveactivity",
                    "-H", "authorization: bearer \(jwt)", "https://127.0.0.1:\(fx.sim.address.port)/3/device/\(t)",
                ]
            ).1
            #expect(out == "200")
        }
        let stats = fx.sim.stats()
        #expect(stats.accepted == 3 && stats.requests == 3 && stats.responses[200] == 3)
        #expect(stats.tokens == 0, "nothing recorded per token")
    }
}
