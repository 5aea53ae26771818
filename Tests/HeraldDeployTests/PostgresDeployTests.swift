import Foundation
import HeraldCore
import Testing

@testable import HeraldCLI

/// The PostgreSQL deployments: Deploy/kubernetes/workers (a Deployment of three workers)
/// and Deploy/compose-postgres.yaml (PostgreSQL and two workers). No cluster or container
/// engine here: the files are parsed and checked against each other and against what
/// `herald serve` and `herald migrate` accept.
@Suite(.enabled(if: Tool.python3WithYAML != nil, "python3 with PyYAML is not installed (Debian package: python3-yaml)"))
struct PostgresDeployTests {
    static let dir = "Deploy/kubernetes/workers"

    static func objects(_ dir: String) throws -> [String: JSON] {
        let kustomization = try YAML.load(dir + "/kustomization.yaml")
        let resources = kustomization["resources"]?.arrayValue?.compactMap { $0.stringValue } ?? []
        var out: [String: JSON] = [:]
        for r in resources {
            #expect(Repo.exists(dir + "/" + r), "kustomization.yaml lists \(r), which does not exist")
            for doc in try YAML.documents(Repo.path(dir + "/" + r)) {
                out["\(doc["kind"]?.stringValue ?? "?")/\(doc[path: "metadata", "name"]?.stringValue ?? "?")"] = doc
            }
        }
        return out
    }

    /// The value of `name` in a container's `env`: a literal, or "secret:NAME/KEY".
    static func env(_ container: JSON, _ name: String) -> String? {
        guard let e = container["env"]?.arrayValue?.first(where: { $0["name"]?.stringValue == name }) else { return nil }
        if let v = e["value"]?.stringValue { return v }
        guard let ref = e[path: "valueFrom", "secretKeyRef"] else { return nil }
        return "secret:\(ref["name"]?.stringValue ?? "?")/\(ref["key"]?.stringValue ?? "?")"
    }

    @Test func threeWorkersTakeTheDatabaseURLFromASecretAndMigrateBeforeServing() throws {
        let objects = try Self.objects(Self.dir)
        let deployment = try #require(objects["Deployment/herald-workers"])
        #expect(deployment[path: "spec", "replicas"]?.intValue == 3)
        let pod = try #require(deployment[path: "spec", "template", "spec"])
        #expect(pod["volumeClaimTemplates"] == nil && deployment[path: "spec", "volumeClaimTemplates"] == nil)  // stateless
        let container = try #require(pod["containers"]?.arrayValue?.first { $0["name"]?.stringValue == "herald" })
        let inits = pod["initContainers"]?.arrayValue ?? []
        #expect(inits.map { $0["args"] } == [["migrate"], ["serve", "--check-config"]])
        for c in inits + [container] {
            #expect(Self.env(c, "HERALD_DB") == "secret:herald-postgres/url", "\(c["name"] ?? .null)")
            #expect(Self.env(c, "PGPASSWORD") == "secret:herald-postgres/password", "\(c["name"] ?? .null)")
            #expect(c[path: "securityContext", "allowPrivilegeEscalation"] == .bool(false))
            #expect(c[path: "securityContext", "readOnlyRootFilesystem"] == .bool(true))
        }
        // Every worker has the same admin token: from the Secret, not a file of its own.
        #expect(Self.env(container, "HERALD_ADMIN_TOKEN") == "secret:herald-admin/token")
        #expect(pod[path: "securityContext", "runAsNonRoot"] == .bool(true))

        // The settings parse as `herald serve` reads them, with a URL where the Secret is.
        let config = (objects["ConfigMap/herald-workers-config"]?["data"]?.objectValue ?? [:]).compactMapValues { $0.stringValue }
        #expect(config["HERALD_DB"] == nil)
        var environment = config
        environment["HERALD_DB"] = "postgresql://herald@db.example.internal:5432/herald"
        var args = Arguments(["--check-config"], environment: environment)
        let settings = try ServeSettings.read(&args)
        try args.finish()
        #expect(StorageTarget(settings.db).isPostgres)
        let metrics = try #require(settings.metricsListen)
        let ports = (container["ports"]?.arrayValue ?? []).reduce(into: [String: Int]()) { out, p in
            if let n = p["name"]?.stringValue, let v = p["containerPort"]?.intValue { out[n] = Int(v) }
        }
        #expect(ports["http"] == settings.listen.port && ports["metrics"] == metrics.port)
        #expect(container[path: "readinessProbe", "httpGet", "path"]?.stringValue == "/readyz")
        #expect(container[path: "livenessProbe", "httpGet", "path"]?.stringValue == "/healthz")
        for probe in ["startupProbe", "livenessProbe", "readinessProbe"] {
            #expect(container[path: probe, "httpGet", "port"]?.stringValue == "metrics", "\(probe)")
        }
        let keyFile = try #require(settings.apnsKeyFile)
        let mounts = (container["volumeMounts"]?.arrayValue ?? []).compactMap { $0["mountPath"]?.stringValue }
        #expect(mounts.contains((keyFile as NSString).deletingLastPathComponent))
        #expect(inits[1]["volumeMounts"] == container["volumeMounts"])
        let howTo = try Repo.text(Self.dir + "/kustomization.yaml")
        #expect(howTo.contains("secret generic herald-postgres"))
        #expect(howTo.contains("secret generic herald-apns --from-file=\((keyFile as NSString).lastPathComponent)="))

        // Prometheus scrapes every pod: annotations, and a ServiceMonitor on the Service
        // whose endpoints are the pods, with job="herald" as the alert rules expect.
        let annotations = deployment[path: "spec", "template", "metadata", "annotations"]
        #expect(annotations?["prometheus.io/scrape"]?.stringValue == "true")
        #expect(annotations?["prometheus.io/port"]?.stringValue == String(metrics.port))
        let podLabels = try #require(deployment[path: "spec", "template", "metadata", "labels"])
        #expect(deployment[path: "spec", "selector", "matchLabels"] == podLabels)
        let service = try #require(objects["Service/herald-workers"])
        #expect(service[path: "spec", "selector"] == podLabels)
        let monitor = try YAML.load(Self.dir + "/prometheus-operator/servicemonitor.yaml")
        #expect(monitor[path: "spec", "endpoints"]?.arrayValue?.first?["port"]?.stringValue == "metrics")
        for (k, v) in monitor[path: "spec", "selector", "matchLabels"]?.objectValue ?? [:] {
            #expect(service[path: "metadata", "labels", k] == v)
        }
        let jobLabel = try #require(monitor[path: "spec", "jobLabel"]?.stringValue)
        let common = try YAML.load(Self.dir + "/kustomization.yaml")["labels"]?.arrayValue?.first?["pairs"]
        #expect(common?[jobLabel]?.stringValue == "herald")
        // A drain keeps two of three.
        #expect(objects["PodDisruptionBudget/herald-workers"]?[path: "spec", "minAvailable"]?.intValue == 2)
        // Beside the single-node StatefulSet, not instead of it.
        #expect(Repo.exists("Deploy/kubernetes/statefulset.yaml"))
    }

    @Test func composeRunsPostgreSQLTwoWorkersAndScrapesEach() throws {
        let compose = try YAML.load("Deploy/compose-postgres.yaml")
        let services = try #require(compose["services"]?.objectValue)
        #expect(Set(services.keys).isSuperset(of: ["postgres", "migrate", "worker-1", "worker-2", "apns-sim", "prometheus"]))
        let migrate = try #require(services["migrate"])
        #expect(migrate["command"] == ["migrate"])
        #expect(migrate[path: "depends_on", "postgres", "condition"]?.stringValue == "service_healthy")
        let published = services["apns-sim"]?["ports"]?.arrayValue?.compactMap(\.stringValue) ?? []
        var ports: [Int] = []
        var databases = Set<String>()
        for name in ["worker-1", "worker-2"] {
            let w = try #require(services[name])
            #expect(w["command"] == ["serve"])
            #expect(w[path: "depends_on", "migrate", "condition"]?.stringValue == "service_completed_successfully")
            #expect(w["network_mode"]?.stringValue == "service:apns-sim")
            let env = (w["environment"]?.objectValue ?? [:]).compactMapValues { $0.stringValue }
            var args = Arguments([], environment: env)
            let s = try ServeSettings.read(&args)
            try args.finish()
            #expect(StorageTarget(s.db).isPostgres)
            #expect(!s.db.contains(":herald-demo-password@"))  // the password in PGPASSWORD, not the URL
            #expect(env["PGPASSWORD"] != nil && env["HERALD_ADMIN_TOKEN"] != nil)
            databases.insert(s.db)
            ports.append(s.listen.port)
            #expect(published.contains("127.0.0.1:\(s.listen.port):\(s.listen.port)"))
        }
        #expect(databases.count == 1 && Set(ports).count == 2)  // one database, two listeners
        let migrateEnv = (migrate["environment"]?.objectValue ?? [:]).compactMapValues { $0.stringValue }
        #expect(migrateEnv["HERALD_DB"] == databases.first)
        let pg = try #require(services["postgres"])
        let pgEnv = (pg["environment"]?.objectValue ?? [:]).compactMapValues { $0.stringValue }
        #expect(databases.first == "postgresql://\(pgEnv["POSTGRES_USER"] ?? "?")@postgres:5432/\(pgEnv["POSTGRES_DB"] ?? "?")")
        #expect(pgEnv["POSTGRES_PASSWORD"] == migrateEnv["PGPASSWORD"])

        // Prometheus scrapes each worker.
        let volumes = services["prometheus"]?["volumes"]?.arrayValue?.compactMap(\.stringValue) ?? []
        let config = try #require(volumes.first { $0.hasSuffix(":/etc/prometheus/prometheus.yml:ro") }?.split(separator: ":").first)
        let prometheus = try YAML.load("Deploy/" + config.dropFirst(2))
        let job = try #require(prometheus["scrape_configs"]?.arrayValue?.first { $0["job_name"]?.stringValue == "herald" })
        let targets = (job["static_configs"]?.arrayValue ?? []).flatMap { $0["targets"]?.arrayValue?.compactMap(\.stringValue) ?? [] }
        #expect(Set(targets) == Set(ports.map { "apns-sim:\($0)" }))
        for (name, service) in services {
            for volume in service["volumes"]?.arrayValue?.compactMap(\.stringValue) ?? [] where volume.hasPrefix("./") {
                let source = String(volume.split(separator: ":")[0].dropFirst(2))
                #expect(Repo.exists("Deploy/" + source), "\(name) mounts ./\(source), which does not exist")
            }
        }
    }

    @Test(.enabled(if: Tool.promtool != nil, "promtool is not installed (Debian package: prometheus)"))
    func theWorkersPrometheusConfigurationIsValid() throws {
        let r = try Tool.run(Tool.promtool!, ["check", "config", Repo.path("Deploy/prometheus/prometheus-workers.yml")])
        #expect(r.status == 0, "\(r.output)")
    }
}
