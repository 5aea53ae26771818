import Foundation
import HeraldCore
import Testing

/// The alert rules, Prometheus configuration and Grafana dashboard in Deploy/.
@Suite struct MonitoringFilesTests {
    static let rules = "Deploy/prometheus/herald-alerts.yml"
    static let ruleTests = "Deploy/prometheus/tests/herald-alerts.test.yml"
    static let dashboard = "Deploy/grafana/herald-dashboard.json"

    @Test(.enabled(if: Tool.promtool != nil, "promtool is not installed (Debian package: prometheus)"))
    func alertRulesPassPromtoolCheck() throws {
        let r = try Tool.run(Tool.promtool!, ["check", "rules", Repo.path(Self.rules)])
        #expect(r.status == 0, "\(r.output)")
    }

    @Test(.enabled(if: Tool.promtool != nil, "promtool is not installed (Debian package: prometheus)"))
    func alertRulesFireAsTheirUnitTestsExpect() throws {
        let r = try Tool.run(Tool.promtool!, ["test", "rules", Repo.path(Self.ruleTests)])
        #expect(r.status == 0, "\(r.output)")
    }

    @Test func everyAlertHasASeverityTextAndAUnitTest() throws {
        let rules = try Repo.text(Self.rules)
        let tests = try Repo.text(Self.ruleTests)
        let alerts = rules.split(separator: "\n").compactMap { line -> String? in
            let t = line.trimmingCharacters(in: .whitespaces)
            return t.hasPrefix("- alert: ") ? String(t.dropFirst("- alert: ".count)) : nil
        }
        #expect(alerts.count >= 10)
        for alert in alerts {
            #expect(tests.contains("alertname: \(alert)\n"), "no promtool test exercises \(alert)")
        }
        // Each rule block carries a severity and both annotations.
        let blocks = rules.components(separatedBy: "- alert: ").dropFirst()
        for block in blocks {
            let name = block.prefix { $0 != "\n" }
            #expect(block.contains("severity: critical") || block.contains("severity: warning"), "\(name): no severity")
            #expect(block.contains("summary:") && block.contains("description:"), "\(name): no summary/description")
        }
    }

    @Test(.enabled(if: Tool.promtool != nil, "promtool is not installed (Debian package: prometheus)"))
    func composePrometheusConfigurationIsValid() throws {
        let r = try Tool.run(Tool.promtool!, ["check", "config", Repo.path("Deploy/prometheus/prometheus.yml")])
        #expect(r.status == 0, "\(r.output)")
    }

    @Test(.enabled(if: Tool.python3WithYAML != nil, "python3 with PyYAML is not installed (Debian package: python3-yaml)"))
    func operatorRuleCarriesTheSameGroupsAsTheRulesFile() throws {
        let file = try YAML.load(Self.rules)
        let operatorRule = try YAML.load("Deploy/kubernetes/prometheus-operator/prometheusrule.yaml")
        #expect(operatorRule["kind"]?.stringValue == "PrometheusRule")
        #expect(operatorRule[path: "spec", "groups"] == file["groups"], "copy the groups of \(Self.rules) into prometheusrule.yaml")
    }

    // MARK: Grafana

    static func panels() throws -> [JSON] {
        let d = try JSON.parse(try Repo.text(Self.dashboard))
        return try #require(d["panels"]?.arrayValue)
    }

    @Test func dashboardPanelsAreWellFormed() throws {
        let d = try JSON.parse(try Repo.text(Self.dashboard))
        #expect(d["uid"]?.stringValue == "herald-overview")
        let variables = try #require(d[path: "templating", "list"]?.arrayValue)
        let datasource = variables.first { $0["name"]?.stringValue == "datasource" }
        #expect(datasource?["type"]?.stringValue == "datasource" && datasource?["query"]?.stringValue == "prometheus")
        #expect(variables.contains { $0["name"]?.stringValue == "instance" })

        var ids = Set<Int64>()
        var queries = 0
        for panel in try Self.panels() {
            let id = try #require(panel["id"]?.intValue)
            #expect(ids.insert(id).inserted, "panel id \(id) is used twice")
            let x = panel[path: "gridPos", "x"]?.intValue ?? -1
            let w = panel[path: "gridPos", "w"]?.intValue ?? 0
            #expect(x >= 0 && w > 0 && x + w <= 24, "panel \(id) is outside the 24-column grid")
            if panel["type"]?.stringValue == "row" { continue }
            let title = panel["title"]?.stringValue ?? "?"
            #expect(panel[path: "datasource", "uid"]?.stringValue == "${datasource}", "\(title): not on the $datasource variable")
            #expect((panel["description"]?.stringValue ?? "").isEmpty == false, "\(title): no description")
            let targets = try #require(panel["targets"]?.arrayValue, "\(title): no queries")
            #expect(!targets.isEmpty)
            for t in targets {
                let expr = t["expr"]?.stringValue ?? ""
                #expect(expr.contains(#"instance=~"$instance""#), "\(title): query ignores the instance variable: \(expr)")
                queries += 1
            }
        }
        #expect(queries >= 30)
    }

    /// Each dashboard query, with Grafana's variables replaced, as a recording rule that
    /// promtool parses: a PromQL syntax check without a Prometheus server.
    @Test(.enabled(if: Tool.promtool != nil, "promtool is not installed (Debian package: prometheus)"))
    func dashboardQueriesAreValidPromQL() throws {
        var yaml = "groups:\n  - name: dashboard\n    rules:\n"
        var n = 0
        for panel in try Self.panels() {
            for t in panel["targets"]?.arrayValue ?? [] {
                guard let expr = t["expr"]?.stringValue else { continue }
                let concrete = expr.replacingOccurrences(of: "$__rate_interval", with: "5m")
                    .replacingOccurrences(of: "$instance", with: ".*")
                yaml += "      - record: dashboard:query_\(n)\n        expr: \(JSON.string(concrete).text)\n"
                n += 1
            }
        }
        let file = NSTemporaryDirectory() + "herald-dashboard-\(UUID().uuidString).yml"
        try yaml.write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let r = try Tool.run(Tool.promtool!, ["check", "rules", file])
        #expect(r.status == 0, "\(r.output)")
        #expect(r.output.contains("\(n) rules found"))
    }

    @Test(.enabled(if: Tool.python3WithYAML != nil, "python3 with PyYAML is not installed (Debian package: python3-yaml)"))
    func grafanaProvisioningPointsAtTheDashboard() throws {
        let datasources = try YAML.load("Deploy/grafana/provisioning/datasources/prometheus.yml")
        let ds = try #require(datasources["datasources"]?.arrayValue?.first)
        #expect(ds["type"]?.stringValue == "prometheus")
        #expect(ds["url"]?.stringValue == "http://prometheus:9090")
        let dashboards = try YAML.load("Deploy/grafana/provisioning/dashboards/herald.yml")
        let folder = try #require(dashboards["providers"]?.arrayValue?.first?[path: "options", "path"]?.stringValue)
        // compose.yaml mounts the dashboard into that folder.
        let compose = try YAML.load("Deploy/compose.yaml")
        let mounts = compose[path: "services", "grafana", "volumes"]?.arrayValue?.compactMap(\.stringValue) ?? []
        #expect(mounts.contains("./grafana/herald-dashboard.json:\(folder)/herald.json:ro"))
    }
}
