import Foundation
import HeraldCore
import HeraldNet
import HeraldTestSupport
import Testing

@testable import HeraldCLI

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Every metric the Grafana dashboard, the alert rules and the operations guide use must be
/// one `herald serve` exports. The test runs the real service (API, scheduler, APNs pool)
/// against the simulator on loopback, publishes one event through the CLI, and reads
/// /metrics from the metrics listener.
@Suite struct MetricsCoverageTests {
    /// Metric names on a /metrics page: series names and the families of `# TYPE` lines
    /// (histogram base names such as herald_fanout_duration_seconds).
    static func exported(_ page: String) -> Set<String> {
        var names = Set<String>()
        for line in page.split(separator: "\n") {
            if line.hasPrefix("# TYPE ") {
                let parts = line.split(separator: " ")
                if parts.count >= 3 { names.insert(String(parts[2])) }
            } else if !line.hasPrefix("#") {
                let end = line.firstIndex { $0 == "{" || $0 == " " } ?? line.endIndex
                names.insert(String(line[..<end]))
            }
        }
        return names
    }

    @Test func dashboardAlertsAndGuideUseOnlyExportedMetrics() throws {
        let sim = try SimFixture()
        var s = ServeSettings()
        s.listen = HostPort(host: "127.0.0.1", port: 0)
        s.metricsListen = HostPort(host: "127.0.0.1", port: 0)
        s.db = sim.dir + "/herald.db"
        s.adminToken = "hk_admin_metrics_test"
        s.adminTokenFile = s.db + ".admin-token"
        s.apnsKeyFile = sim.files.apnsKeyFile
        s.apnsKeyID = sim.files.keyID
        s.apnsTeamID = sim.files.teamID
        s.apnsHost = HostPort(host: "127.0.0.1", port: sim.sim.address.port)
        s.apnsCAFile = sim.files.certificateFile
        let service = try HeraldService(s, logger: .discard, console: Console(capture: true))
        defer { service.stop() }
        let metricsServer = try #require(service.metricsServer)

        // One channel, one subscriber, one event followed to `done`: the series that only
        // exist after traffic (APNs results, finished events) are then on the page.
        let env = ["HERALD_SERVER": "http://127.0.0.1:\(service.api.port)", "HERALD_ADMIN_TOKEN": s.adminToken!]
        func cli(_ args: [String]) -> Int32 {
            let console = Console(capture: true)
            let code = HeraldCLI.main(args, environment: env, console: console)
            if code != 0 { Issue.record("herald \(args.joined(separator: " ")) → \(code): \(console.capturedError)") }
            return code
        }
        try #require(cli(["channels", "create", "match-1", "--bundle-id", "com.example.app", "--env", "sandbox"]) == 0)
        try #require(cli(["subs", "add", "match-1", String(repeating: "ab", count: 80)]) == 0)
        try #require(
            cli(["publish", "match-1", "--json", #"{"event":"update","content-state":{"home":1,"away":0}}"#, "--wait", "--timeout", "30"])
                == 0)
        // A reconciliation sets the per-app gauge of APNs channels.
        try #require(cli(["channels", "reconcile"]) == 0)

        let http = HTTPExchange(timeout: 10)
        let reply = try http.perform(URLRequest(url: URL(string: "http://127.0.0.1:\(metricsServer.port)/metrics")!))
        #expect(reply.status == 200)
        let page = String(decoding: reply.body, as: UTF8.self)
        let exported = Self.exported(page)
        #expect(page.contains("herald_apns_requests_total{") && page.contains(#"result="delivered""#))
        #expect(exported.contains("herald_events_total"))

        let sources = [
            "Deploy/grafana/herald-dashboard.json", "Deploy/prometheus/herald-alerts.yml",
            "Deploy/kubernetes/prometheus-operator/prometheusrule.yaml", "docs/operations.md", "docs/architecture.md",
        ]
        var used = 0
        for file in sources {
            let names = metricNames(in: try Repo.text(file))
            used += names.count
            let missing = names.subtracting(exported)
            #expect(missing.isEmpty, "\(file) uses metrics /metrics does not export: \(missing.sorted())")
        }
        // The dashboard draws on most of what is exported (the scan is not vacuous).
        #expect(metricNames(in: try Repo.text("Deploy/grafana/herald-dashboard.json")).count >= 25)
        #expect(used > 0)
    }
}
