import Foundation
import HeraldCore
import HeraldNet
import Testing

@testable import HeraldCLI

/// Deploy/kubernetes: no cluster here, so the manifests are parsed and checked against each
/// other and against what `herald serve` accepts.
@Suite(.enabled(if: Tool.python3WithYAML != nil, "python3 with PyYAML is not installed (Debian package: python3-yaml)"))
struct KubernetesManifestsTests {
    static let dir = "Deploy/kubernetes"

    /// Every document of the kustomization's resources, by kind and name.
    static func objects() throws -> [String: JSON] {
        let kustomization = try YAML.load(dir + "/kustomization.yaml")
        let resources = kustomization["resources"]?.arrayValue?.compactMap { $0.stringValue } ?? []
        #expect(resources.count >= 4)
        var out: [String: JSON] = [:]
        for r in resources {
            #expect(Repo.exists(dir + "/" + r), "kustomization.yaml lists \(r), which does not exist")
            for doc in try YAML.documents(Repo.path(dir + "/" + r)) {
                let kind = doc["kind"]?.stringValue ?? "?"
                let name = doc[path: "metadata", "name"]?.stringValue ?? "?"
                #expect(doc["apiVersion"] != nil, "\(r): \(kind) without apiVersion")
                out["\(kind)/\(name)"] = doc
            }
        }
        return out
    }

    @Test func statefulSetRunsOnePodWithItsDatabaseOnAVolumeAndTheKeyFromASecret() throws {
        let objects = try Self.objects()
        let sts = try #require(objects["StatefulSet/herald"])
        let config = (objects["ConfigMap/herald-config"]?["data"]?.objectValue ?? [:]).compactMapValues { $0.stringValue }
        #expect(!config.isEmpty)
        #expect(sts[path: "spec", "replicas"]?.intValue == 1)  // one SQLite writer

        // The settings parse as `herald serve` reads them.
        var args = Arguments(["--check-config"], environment: config)
        let settings = try ServeSettings.read(&args)
        try args.finish()
        let metrics = try #require(settings.metricsListen)

        let pod = try #require(sts[path: "spec", "template", "spec"])
        let container = try #require(pod["containers"]?.arrayValue?.first { $0["name"]?.stringValue == "herald" })
        #expect(container["args"] == ["serve"])
        #expect(container["envFrom"]?.arrayValue?.first?[path: "configMapRef", "name"]?.stringValue == "herald-config")
        let ports = Dictionary(
            uniqueKeysWithValues: (container["ports"]?.arrayValue ?? []).compactMap { p in
                p["name"]?.stringValue.flatMap { n in p["containerPort"]?.intValue.map { (n, Int($0)) } }
            })
        #expect(ports["http"] == settings.listen.port)
        #expect(ports["metrics"] == metrics.port)

        // Probes: /readyz for readiness, /healthz for liveness, on the metrics listener.
        #expect(container[path: "readinessProbe", "httpGet", "path"]?.stringValue == "/readyz")
        #expect(container[path: "livenessProbe", "httpGet", "path"]?.stringValue == "/healthz")
        for probe in ["startupProbe", "livenessProbe", "readinessProbe"] {
            let port = container[path: probe, "httpGet", "port"]?.stringValue
            #expect(port == "metrics", "\(probe) is not on the metrics port")
        }

        // The database directory is the persistent volume; the key file is in the Secret.
        let mounts = (container["volumeMounts"]?.arrayValue ?? []).compactMap { m -> (String, String)? in
            guard let n = m["name"]?.stringValue, let p = m["mountPath"]?.stringValue else { return nil }
            return (n, p)
        }
        let mountPath = Dictionary(uniqueKeysWithValues: mounts)
        let claims = sts[path: "spec", "volumeClaimTemplates"]?.arrayValue ?? []
        #expect(claims.contains { $0[path: "metadata", "name"]?.stringValue == "data" })
        #expect((settings.db as NSString).deletingLastPathComponent == mountPath["data"])
        let keyFile = try #require(settings.apnsKeyFile)
        #expect((keyFile as NSString).deletingLastPathComponent == mountPath["apns-key"])
        let secretVolume = try #require(pod["volumes"]?.arrayValue?.first { $0["name"]?.stringValue == "apns-key" })
        #expect(secretVolume[path: "secret", "secretName"]?.stringValue == "herald-apns")
        // The kustomization tells how to create that Secret, under the file name Herald reads.
        let howTo = try Repo.text(Self.dir + "/kustomization.yaml")
        #expect(howTo.contains("secret generic herald-apns --from-file=\((keyFile as NSString).lastPathComponent)="))

        // The image's user, not root, with nothing to escalate to.
        #expect(pod[path: "securityContext", "runAsNonRoot"] == .bool(true))
        #expect(pod[path: "securityContext", "runAsUser"]?.intValue == 10001)
        #expect(pod[path: "securityContext", "fsGroup"]?.intValue == 10001)
        for c in (pod["containers"]?.arrayValue ?? []) + (pod["initContainers"]?.arrayValue ?? []) {
            #expect(c[path: "securityContext", "allowPrivilegeEscalation"] == .bool(false))
            #expect(c[path: "securityContext", "readOnlyRootFilesystem"] == .bool(true))
        }
        // The init container validates the same configuration before the server starts.
        let check = try #require(pod["initContainers"]?.arrayValue?.first)
        #expect(check["args"] == ["serve", "--check-config"])
        #expect(check["volumeMounts"] == container["volumeMounts"])

        // Scrape annotations name the metrics port.
        let annotations = sts[path: "spec", "template", "metadata", "annotations"]
        #expect(annotations?["prometheus.io/scrape"]?.stringValue == "true")
        #expect(annotations?["prometheus.io/port"]?.stringValue == String(metrics.port))
    }

    @Test func servicesAndServiceMonitorReachThePod() throws {
        let objects = try Self.objects()
        let sts = try #require(objects["StatefulSet/herald"])
        let podLabels = try #require(sts[path: "spec", "template", "metadata", "labels"])
        #expect(sts[path: "spec", "selector", "matchLabels"] == podLabels)

        let headless = try #require(objects["Service/\(sts[path: "spec", "serviceName"]?.stringValue ?? "?")"])
        #expect(headless[path: "spec", "clusterIP"]?.stringValue == "None")
        let service = try #require(objects["Service/herald"])
        #expect(service[path: "spec", "selector"] == podLabels)
        let servicePorts = service[path: "spec", "ports"]?.arrayValue?.compactMap { $0["name"]?.stringValue } ?? []
        #expect(Set(servicePorts) == ["http", "metrics"])

        let monitor = try YAML.load(Self.dir + "/prometheus-operator/servicemonitor.yaml")
        #expect(monitor["kind"]?.stringValue == "ServiceMonitor")
        #expect(monitor[path: "spec", "endpoints"]?.arrayValue?.first?["port"]?.stringValue == "metrics")
        let selector = try #require(monitor[path: "spec", "selector", "matchLabels"]?.objectValue)
        for (k, v) in selector { #expect(service[path: "metadata", "labels", k] == v) }
        // The alert rules expect job="herald": the job comes from the Service's name label.
        let jobLabel = try #require(monitor[path: "spec", "jobLabel"]?.stringValue)
        #expect(service[path: "metadata", "labels", jobLabel]?.stringValue == "herald")
    }
}
