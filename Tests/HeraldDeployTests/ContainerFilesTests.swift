import Foundation
import HeraldCore
import HeraldNet
import Testing

@testable import HeraldCLI

/// The Dockerfile and compose file cannot be built or run here (no container engine), so
/// these tests check what can be checked without one: the structure, the paths copied,
/// and that the settings they pass are ones `herald serve` and `herald apns-sim` accept.
@Suite struct ContainerFilesTests {
    /// One Dockerfile instruction, continuation lines joined.
    struct Instruction {
        var keyword: String
        var arguments: String
    }

    /// Instructions grouped by stage (each starts with its FROM).
    static func stages() throws -> [[Instruction]] {
        var logical: [String] = []
        var current = ""
        for raw in try Repo.text("Deploy/Dockerfile").split(separator: "\n", omittingEmptySubsequences: false) {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if current.isEmpty && (line.isEmpty || line.hasPrefix("#")) { continue }
            if line.hasPrefix("#") { continue }  // a comment inside a continued instruction
            if line.hasSuffix("\\") {
                current += line.dropLast() + " "
            } else {
                logical.append(current + line)
                current = ""
            }
        }
        var stages: [[Instruction]] = [[]]
        for l in logical {
            let keyword = String(l.prefix { !$0.isWhitespace }).uppercased()
            let args = l.dropFirst(keyword.count).trimmingCharacters(in: .whitespaces)
            if keyword == "FROM" { stages.append([]) }
            stages[stages.count - 1].append(Instruction(keyword: keyword, arguments: args))
        }
        return stages.filter { !$0.isEmpty }
    }

    @Test func dockerfileBuildsWithSwiftAndRunsOnSlimDebianAsAnUnprivilegedUser() throws {
        let all = try Self.stages()
        let stages = all.filter { $0.first?.keyword == "FROM" }
        try #require(stages.count == 2)
        let build = stages[0]
        let run = stages[1]
        #expect(build[0].arguments.hasPrefix("swift:${SWIFT_VERSION}-${DEBIAN_RELEASE}"))
        #expect(run[0].arguments == "debian:${DEBIAN_RELEASE}-slim")  // same release: same C libraries

        // Every path the build copies exists and passes the context filter.
        let ignore = try Repo.text("Deploy/Dockerfile.dockerignore")
        let copied = build.filter { $0.keyword == "COPY" }.map { $0.arguments.split(separator: " ")[0] }.map(String.init)
        for required in ["Package.swift", "Sources", "Tests", "Plugins", "Migrations"] {
            #expect(copied.contains(required), "the build stage does not copy \(required)")
        }
        for source in copied {
            #expect(Repo.exists(source), "COPY \(source): no such path in the repository")
            #expect(ignore.contains("!\(source)"), "Dockerfile.dockerignore filters out \(source)")
        }
        #expect(build.contains { $0.keyword == "RUN" && $0.arguments.contains("swift build -c release --product herald") })

        let user = try #require(run.last { $0.keyword == "USER" }?.arguments)
        #expect(!["root", "0", "0:0"].contains(user))
        #expect(user == "10001:10001")
        let env = run.filter { $0.keyword == "ENV" }.map(\.arguments).joined(separator: " ")
        #expect(env.contains("HERALD_DB=/var/lib/herald/herald.db") && env.contains("HERALD_LISTEN=0.0.0.0:8080"))
        #expect(run.contains { $0.keyword == "VOLUME" && $0.arguments.contains("/var/lib/herald") })
        #expect(run.contains { $0.keyword == "EXPOSE" && $0.arguments == "8080" })
        let health = try #require(run.first { $0.keyword == "HEALTHCHECK" }?.arguments)
        #expect(health.contains("/healthz") && health.contains("${HERALD_LISTEN##*:}"))
        #expect(run.contains { $0.keyword == "ENTRYPOINT" && $0.arguments == #"["herald"]"# })
        #expect(run.contains { $0.keyword == "CMD" && $0.arguments == #"["serve"]"# })
        // Exec (JSON) form everywhere (hadolint DL3025): no shell between the runtime and
        // herald, so SIGTERM reaches it; the health check names its shell itself.
        let probe = try #require(health.range(of: "CMD ").map { String(health[$0.upperBound...]) })
        let argv = try JSON.parse(probe).arrayValue?.compactMap(\.stringValue) ?? []
        #expect(argv.count == 3 && argv.prefix(2) == ["sh", "-c"], "HEALTHCHECK CMD is not [\"sh\", \"-c\", …]: \(probe)")

        // The run stage installs the libraries matching the build stage's -dev packages,
        // CA roots (APNs' certificate) and curl (the health check).
        let packages = run.filter { $0.keyword == "RUN" }.map(\.arguments).joined(separator: " ")
        for p in ["libnghttp2-14", "libssl3", "libsqlite3-0", "libmicrohttpd12", "libcurl4", "ca-certificates", "curl"] {
            #expect(packages.contains(" \(p) "), "the run stage does not install \(p)")
        }
    }

    /// The health check's port expansion picks the port out of HERALD_LISTEN.
    @Test func healthCheckPortExpansionTakesThePortOfTheListenAddress() throws {
        let sh = try #require(Tool.find("sh"))
        for (listen, port) in [("0.0.0.0:8080", "8080"), ("[::]:9000", "9000"), ("127.0.0.1:18080", "18080")] {
            let r = try Tool.run(sh, ["-c", "HERALD_LISTEN='\(listen)'; echo \"${HERALD_LISTEN##*:}\""])
            #expect(r.stdout == port + "\n")
        }
    }

    @Test(.enabled(if: Tool.python3WithYAML != nil, "python3 with PyYAML is not installed (Debian package: python3-yaml)"))
    func composeRunsHeraldAgainstTheSimulatorWithPrometheusScrapingIt() throws {
        let compose = try YAML.load("Deploy/compose.yaml")
        let services = try #require(compose["services"]?.objectValue)
        #expect(Set(services.keys).isSuperset(of: ["herald", "apns-sim", "prometheus", "grafana"]))
        let herald = try #require(services["herald"])
        let sim = try #require(services["apns-sim"])

        // Both run this repository's image.
        for s in [herald, sim] {
            #expect(s[path: "build", "dockerfile"]?.stringValue == "Deploy/Dockerfile")
            #expect(s[path: "build", "context"]?.stringValue == "..")
        }

        // The simulator's command and Herald's environment parse, and agree.
        let simArgs = sim["command"]?.arrayValue?.compactMap { $0.stringValue } ?? []
        #expect(simArgs.first == "apns-sim")
        var simArguments = Arguments(Array(simArgs.dropFirst()), environment: [:])
        let simSettings = try APNSSimCommand.Settings.read(&simArguments)
        try simArguments.finish()
        let env = (herald["environment"]?.objectValue ?? [:]).compactMapValues { $0.stringValue }
        #expect(!env.isEmpty)
        var args = Arguments(herald["command"]?.arrayValue?.compactMap(\.stringValue).dropFirst().map { $0 } ?? [], environment: env)
        let settings = try ServeSettings.read(&args)
        try args.finish()
        #expect(herald["network_mode"]?.stringValue == "service:apns-sim")
        #expect(settings.apnsHost == simSettings.listen)  // one network namespace: loopback
        #expect(simSettings.listen.host == "127.0.0.1")  // the simulator's certificate names 127.0.0.1
        #expect(herald[path: "depends_on", "apns-sim", "condition"]?.stringValue == "service_healthy")
        #expect(sim[path: "healthcheck", "test"] != nil)

        // Herald reads the simulator's key and certificate from the simulator's volume,
        // with the key and team IDs the fixed identity file gives it.
        let identity = try JSON.parse(try Repo.text("Deploy/compose/apns-sim-identity.json"))
        let keyID = try #require(identity["key_id"]?.stringValue)
        #expect(settings.apnsKeyID == keyID && settings.apnsTeamID == identity["team_id"]?.stringValue)
        let simVolumes = sim["volumes"]?.arrayValue?.compactMap(\.stringValue) ?? []
        let heraldVolumes = herald["volumes"]?.arrayValue?.compactMap(\.stringValue) ?? []
        #expect(simVolumes.contains("apns-sim:\(simSettings.directory)"))
        #expect(simVolumes.contains("./compose/apns-sim-identity.json:\(simSettings.directory)/identity.json:ro"))
        let simMount = try #require(heraldVolumes.first { $0.hasPrefix("apns-sim:") }?.split(separator: ":")[1])
        #expect(settings.apnsKeyFile == "\(simMount)/AuthKey_\(keyID).p8")
        #expect(settings.apnsCAFile == "\(simMount)/sim-cert.pem")
        #expect(heraldVolumes.contains { $0.hasPrefix("herald-data:") && settings.db.hasPrefix(String($0.split(separator: ":")[1]) + "/") })

        // Herald's port is published by the namespace's owner, and Prometheus scrapes it there.
        let published = sim["ports"]?.arrayValue?.compactMap(\.stringValue) ?? []
        #expect(published.contains("127.0.0.1:\(settings.listen.port):\(settings.listen.port)"))
        let prometheus = try YAML.load("Deploy/prometheus/prometheus.yml")
        let job = try #require(prometheus["scrape_configs"]?.arrayValue?.first { $0["job_name"]?.stringValue == "herald" })
        let targets = job["static_configs"]?.arrayValue?.first?["targets"]?.arrayValue?.compactMap(\.stringValue) ?? []
        #expect(targets == ["apns-sim:\(settings.listen.port)"])

        // Every bind-mounted file exists beside compose.yaml.
        for (name, service) in services {
            for volume in service["volumes"]?.arrayValue?.compactMap(\.stringValue) ?? [] where volume.hasPrefix("./") {
                let source = String(volume.split(separator: ":")[0].dropFirst(2))
                #expect(Repo.exists("Deploy/" + source), "\(name) mounts ./\(source), which does not exist")
            }
        }
    }
}
