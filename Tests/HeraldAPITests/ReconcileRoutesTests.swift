import Foundation
import HeraldAPI
import HeraldCLI
import HeraldCore
import HeraldNet
import HeraldSimulator
import HeraldTestSupport
import Testing

/// `POST /v1/channels:reconcile` and `herald channels reconcile` against a simulator with
/// orphans planted and a channel deleted behind Herald's back through its control API.
/// Each test has its own server and simulator (a reconciliation sees every channel of the
/// server, so a shared one would see other tests' channels mid-creation). Runs on
/// PostgreSQL with HERALD_TEST_STORAGE=postgres.
@Suite struct ReconcileRoutesTests {
    /// The simulator's control interface, as a test client talks to it.
    final class Control {
        let control: SimulatorControl
        let client: APIClient
        init(_ sim: APNSSimulator) throws {
            control = try SimulatorControl(simulator: sim, listen: HostPort(host: "127.0.0.1", port: 0), logger: .discard)
            client = APIClient(port: UInt16(control.address.port))
        }
        deinit { control.stop() }

        func plant(_ bundle: String, count: Int) throws -> [String] {
            let r = try client.send("POST", "/channels", json: ["bundle_id": .string(bundle), "count": .int(Int64(count))])
            try #require(r.status == 201, "\(r.text)")
            let ids = r.json?["channels"]?.arrayValue?.compactMap { $0.stringValue }
            return try #require(ids)
        }

        func delete(_ id: String) throws -> Int {
            try client.send("DELETE", "/channels/" + segment(id)).status
        }
    }

    func reconcile(_ fx: APIFixture, apply: Bool? = nil) throws -> JSON {
        let r = try fx.admin("POST", "/v1/channels:reconcile", json: apply.map { ["apply": .bool($0)] })
        try #require(r.status == 200, "\(r.status) \(r.text)")
        return try #require(r.json)
    }

    func app(_ report: JSON, _ bundle: String, _ env: String = "sandbox") throws -> JSON {
        try #require(
            report["apps"]?.arrayValue?.first { $0["bundle_id"]?.stringValue == bundle && $0["environment"]?.stringValue == env })
    }

    func gauge(_ fx: APIFixture, _ bundle: String) throws -> Double? {
        let text = try fx.client.send("GET", "/metrics").text
        let prefix = "herald_apns_channels{bundle_id=\"\(bundle)\",environment=\"sandbox\"} "
        return text.split(separator: "\n").first { $0.hasPrefix(prefix) }.flatMap { Double($0.dropFirst(prefix.count)) }
    }

    @Test func orphansAreFoundAndDeletedAndALostChannelRefusesPublishes() throws {
        let fx = try APIFixture.start(storage: testStorage)
        let control = try Control(fx.sim.sim)
        let bundle = "com.example.app"
        let kept = try fx.createChannel("kept", mode: "hybrid", bundle: bundle)
        let lost = try fx.createChannel("lost", mode: "broadcast", bundle: bundle)
        try fx.createChannel("fan", bundle: bundle)
        let keptID = try #require(kept["apns_channel_id"]?.stringValue)
        let lostID = try #require(lost["apns_channel_id"]?.stringValue)

        // A channel closed while APNs failed every request: closed in Herald, still at APNs.
        let staleChannel = try fx.createChannel("stale", mode: "broadcast", bundle: bundle)
        let stale = try #require(staleChannel["apns_channel_id"]?.stringValue)
        fx.sim.sim.setFaults(try SimulatorFaults.parse("500=1").get())
        #expect(try fx.admin("DELETE", "/v1/channels/stale").status == 200)
        fx.sim.sim.setFaults(SimulatorFaults())
        #expect(fx.sim.sim.channels(bundleID: bundle).contains(stale))

        let planted = try control.plant(bundle, count: 3)
        #expect(try control.delete(lostID) == 204)

        // Without --apply: found, the lost one marked, nothing deleted.
        var report = try reconcile(fx)
        var a = try app(report, bundle)
        #expect(report["apply"] == false)
        #expect(a["apns_channels"]?.intValue == 5)
        let orphans = a["orphans"]?.arrayValue ?? []
        #expect(Set(orphans.compactMap { $0["apns_channel_id"]?.stringValue }) == Set(planted + [stale]))
        #expect(orphans.first { $0["apns_channel_id"]?.stringValue == stale }?["herald_channel"] == "stale")
        #expect(orphans.first { $0["apns_channel_id"]?.stringValue == stale }?["why"] == "closed")
        #expect(orphans.filter { $0["why"] == "unknown" }.count == 3)
        #expect(a["lost"] == [["channel": "lost", "apns_channel_id": .string(lostID), "new": true]])
        #expect(report["orphans"] == 4 && report["lost"] == 1 && report["deleted"] == 0 && report["failed"] == 0)
        #expect(fx.sim.sim.channels(bundleID: bundle).count == 5)
        #expect(try gauge(fx, bundle) == 5)

        // The lost channel refuses publishes; the others still publish.
        let refused = try fx.publish("lost", update())
        #expect(refused.status == 409)
        #expect(refused.errorCode == "channel_lost")
        #expect(refused.errorMessage?.contains(lostID) == true)
        #expect(try fx.publish("lost", update(), query: "?dry_run=true").status == 409)
        #expect(try fx.publish("kept", update()).status == 202)

        // Marked once: the next run says it was marked before.
        report = try reconcile(fx, apply: false)
        #expect(try app(report, bundle)["lost"]?.arrayValue?.first?["new"] == false)

        // --apply deletes the orphans at APNs; what is left is Herald's own.
        report = try reconcile(fx, apply: true)
        a = try app(report, bundle)
        #expect(report["deleted"] == 4 && report["failed"] == 0)
        #expect(a["orphans"]?.arrayValue?.allSatisfy { $0["deleted"] == true } == true)
        #expect(a["apns_channels"] == 1)
        #expect(fx.sim.sim.channels(bundleID: bundle) == [keptID])
        #expect(try gauge(fx, bundle) == 1)
        report = try reconcile(fx, apply: true)
        #expect(report["orphans"] == 0 && report["deleted"] == 0 && report["lost"] == 1)

        // Closed, the lost channel is only closed.
        #expect(try fx.admin("DELETE", "/v1/channels/lost").status == 200)
        #expect(try fx.publish("lost", update()).errorCode == "channel_closed")
        #expect(try reconcile(fx)["lost"] == 0)
    }

    @Test func theCLIPrintsTheReportAndAppliesIt() throws {
        let fx = try APIFixture.start(storage: testStorage)
        let control = try Control(fx.sim.sim)
        try fx.createChannel("cast", mode: "broadcast", bundle: "com.example.cli")
        let planted = try control.plant("com.example.cli", count: 2)
        func herald(_ args: [String]) -> (code: Int32, out: String, err: String) {
            let console = Console(capture: true, isTTY: false)
            let env = ["HERALD_SERVER": fx.baseURL, "HERALD_ADMIN_TOKEN": fx.adminToken, "HERALD_DB": "/nonexistent/herald.db"]
            let code = HeraldCLI.main(args, environment: env, console: console)
            return (code, console.capturedOutput, console.capturedError)
        }
        var r = herald(["channels", "reconcile"])
        #expect(r.code == 0, "\(r.err)")
        let row = try #require(r.out.split(separator: "\n").first { $0.hasPrefix("com.example.cli ") })
        #expect(
            row.split(separator: " ", omittingEmptySubsequences: true).map(String.init).prefix(5) == [
                "com.example.cli", "sandbox", "3", "2", "0",
            ])
        for id in planted { #expect(r.out.contains("orphan  com.example.cli sandbox \(id) (unknown to Herald)")) }
        #expect(r.out.contains("run with --apply"))

        r = herald(["channels", "reconcile", "--apply", "--json"])
        #expect(r.code == 0, "\(r.err)")
        let json = try #require(try? JSON.parse(r.out))
        #expect(json["deleted"] == 2)
        #expect(fx.sim.sim.channels(bundleID: "com.example.cli").count == 1)
        #expect(herald(["channels", "reconcile", "--help"]).out.contains("--apply"))
    }

    @Test func aBadBodyIsRefusedAndOnlyAdminsReconcile() throws {
        let fx = try APIFixture.start(storage: testStorage)
        #expect(try fx.admin("POST", "/v1/channels:reconcile", json: ["apply": "yes"]).errorCode == "invalid_field")
        #expect(try fx.admin("POST", "/v1/channels:reconcile", json: ["dry": true]).errorCode == "unknown_field")
        #expect(try fx.admin("GET", "/v1/channels:reconcile").status == 405)
        try fx.createChannel("p")
        let key = try fx.createKey("publisher", ["p"])
        #expect(try fx.client.send("POST", "/v1/channels:reconcile", token: key.secret).status == 403)
        #expect(try fx.client.send("POST", "/v1/channels:reconcile").status == 401)
        // No channels with an APNs channel: the app is still listed, nothing found.
        let report = try reconcile(fx)
        #expect(report["orphans"] == 0 && report["lost"] == 0)
    }

    @Test func nearTheLimitTheGaugeShowsItAndTheLogWarns() throws {
        let lines = Locked<[String]>([])
        let logger = Logger(subsystem: "test", sink: LogSink(level: .info) { line in lines.withLock { $0.append(line) } })
        let fx = try APIFixture(storage: testStorage) { p in
            var c = APIConfig()
            c.adminToken = Redacted(p.adminToken)
            return APIServer(
                config: c, store: p.storage, engine: p.engine, channelManagers: p.channelManagers, metrics: p.metrics, logger: logger)
        }
        let control = try Control(fx.sim.sim)
        try fx.createChannel("busy", mode: "broadcast", bundle: "com.example.busy")
        _ = try control.plant("com.example.busy", count: 8_999)
        let a = try app(try reconcile(fx), "com.example.busy")
        #expect(a["apns_channels"] == 9_000)
        #expect(try gauge(fx, "com.example.busy") == 9_000)
        let text = try fx.client.send("GET", "/metrics").text
        #expect(text.contains("# HELP herald_apns_channels "))
        let warning = lines.withLock { $0 }.compactMap { try? JSON.parse($0) }.first { $0["event"] == "apns.channels_near_limit" }
        #expect(warning?["level"] == "warning")
        #expect(warning?["bundle_id"] == "com.example.busy" && warning?["channels"] == 9_000 && warning?["limit"] == 10_000)
    }
}
