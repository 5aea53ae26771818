import Foundation
import HeraldCore
import HeraldSimulator
import HeraldTestSupport
import Testing

/// The `herald` binary run as a subprocess, as an operator would.
func herald(_ args: [String], env: [String: String]) throws -> (status: Int32, out: String, err: String) {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: ServeProcess.binary)
    p.arguments = args
    var e = ProcessInfo.processInfo.environment
    for (k, v) in env { e[k] = v }
    p.environment = e
    let out = Pipe()
    let err = Pipe()
    p.standardOutput = out
    p.standardError = err
    try p.run()
    let o = out.fileHandleForReading.readDataToEndOfFile()
    let r = err.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    return (p.terminationStatus, String(decoding: o, as: UTF8.self), String(decoding: r, as: UTF8.self))
}

@Suite(.serialized) struct ServeProcessCLITests {
    @Test func theCLIDrivesARunningServerAndPromtoolAcceptsItsMetrics() throws {
        let sim = try SimFixture()
        let db = sim.dir + "/herald.db"
        let serve = try ServeProcess(db: db, sim: sim)
        defer { serve.stop() }
        let env = ["HERALD_SERVER": serve.api!.absoluteString, "HERALD_DB": db]
        var r = try herald(["channels", "create", "final", "--bundle-id", "com.example.app", "--env", "sandbox"], env: env)
        #expect(r.status == 0, "\(r.err)")
        let tokens = makeTokens(300, seed: 71)
        let file = sim.dir + "/tokens.txt"
        try (tokens.joined(separator: "\n") + "\n").write(toFile: file, atomically: true, encoding: .utf8)
        r = try herald(["subs", "import", "final", file], env: env)
        #expect(r.status == 0, "\(r.err)")
        r = try herald(["publish", "final", "--json", #"{"event":"update","content-state":{"home":1,"away":0}}"#, "--wait"], env: env)
        #expect(r.status == 0, "\(r.err)")
        #expect(r.out.contains("done"))
        r = try herald(["channels", "list", "--json"], env: env)
        #expect(r.status == 0)
        let list = try JSON.parse(r.out)
        #expect(list["channels"]?.arrayValue?.first?["subscribers"]?["total"] == .int(300))
        // Wrong token: exit 1 with a message; unknown verb: exit 2.
        r = try herald(["channels", "list"], env: env.merging(["HERALD_ADMIN_TOKEN": "hk_nope_nope"]) { $1 })
        #expect(r.status == 1)
        #expect(r.err.contains("401"))
        #expect(try herald(["chanels"], env: env).status == 2)
        // Server gone: exit 1, says how to fix it.
        r = try herald(["channels", "list"], env: ["HERALD_SERVER": "http://127.0.0.1:1", "HERALD_DB": db])
        #expect(r.status == 1)
        #expect(r.err.contains("cannot reach"))

        // promtool (Debian's prometheus package) on the live /metrics.
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/promtool") else {
            print("skipped promtool: install the prometheus package")
            return
        }
        let metrics = try Data(contentsOf: serve.api!.appendingPathComponent("metrics"))
        let text = String(decoding: metrics, as: UTF8.self)
        // Every pool series carries its team (issue #15): with the single key, its Team ID.
        #expect(
            text.contains(
                "herald_apns_requests_total{pool=\"token_sandbox\",reason=\"\",result=\"delivered\",team=\"\(sim.files.teamID)\"} 300"))
        #expect(text.contains("herald_events_total{kind=\"update\",state=\"done\"} 1"))
        let check = Process()
        check.executableURL = URL(fileURLWithPath: "/usr/bin/promtool")
        check.arguments = ["check", "metrics"]
        let input = Pipe()
        let output = Pipe()
        check.standardInput = input
        check.standardOutput = output
        check.standardError = output
        try check.run()
        input.fileHandleForWriting.write(metrics)
        try input.fileHandleForWriting.close()
        let said = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        check.waitUntilExit()
        #expect(check.terminationStatus == 0, "promtool check metrics: \(said)")
    }
}
