import Foundation
import HeraldCore
import HeraldNet

/// One `herald serve` setting: its flag, environment variable, default and meaning. The
/// table drives parsing, `--help`, and the configuration reference in docs/operations.md
/// (a test checks the document lists every one).
struct ServeOption: Sendable {
    let flag: String
    let env: String
    let defaultValue: String?
    let help: String
}

/// The settings of `herald serve`, read from flags and environment variables.
struct ServeSettings: Sendable {
    static let options: [ServeOption] = [
        ServeOption(flag: "--listen", env: "HERALD_LISTEN", defaultValue: "127.0.0.1:8080", help: "address of the HTTP API"),
        ServeOption(
            flag: "--metrics-listen", env: "HERALD_METRICS_LISTEN", defaultValue: nil,
            help: "extra address serving only /metrics, /healthz and /readyz (a private network)"),
        ServeOption(
            flag: "--db", env: "HERALD_DB", defaultValue: "./herald.db",
            help: "SQLite database file, or a postgresql:// URL (password in PGPASSWORD or ~/.pgpass); created or migrated on start"),
        ServeOption(
            flag: "--db-sync", env: "HERALD_DB_SYNC", defaultValue: "full",
            help: "full: every commit fsynced (survives power loss); normal: survives a process crash only"),
        ServeOption(
            flag: "--lease-seconds", env: "HERALD_LEASE_SECONDS", defaultValue: "15",
            help: "PostgreSQL: how long a worker's lease on a channel's shards holds unless renewed (1-3600)"),
        ServeOption(
            flag: "--admin-token", env: "HERALD_ADMIN_TOKEN", defaultValue: nil,
            help: "the admin bearer token; when absent one is made and written to --admin-token-file"),
        ServeOption(
            flag: "--admin-token-file", env: "HERALD_ADMIN_TOKEN_FILE", defaultValue: "<db>.admin-token",
            help: "where the generated admin token is kept (mode 0600)"),
        ServeOption(
            flag: "--apns-key-file", env: "HERALD_APNS_KEY_FILE", defaultValue: nil, help: "the .p8 signing key from Apple (never logged)"),
        ServeOption(flag: "--apns-key-id", env: "HERALD_APNS_KEY_ID", defaultValue: nil, help: "the key's 10-character Key ID"),
        ServeOption(flag: "--apns-team-id", env: "HERALD_APNS_TEAM_ID", defaultValue: nil, help: "your 10-character Team ID"),
        ServeOption(
            flag: "--apns-teams-file", env: "HERALD_APNS_TEAMS_FILE", defaultValue: nil,
            help:
                "several Apple teams: a JSON file [{\"team_id\",\"key_id\",\"key_file\",\"bundle_ids\":[...]}, ...] (key_file relative to the file); a channel's bundle_id picks its team. Instead of the three single-key settings, not with them"
        ),
        ServeOption(
            flag: "--apns-host", env: "HERALD_APNS_HOST", defaultValue: nil,
            help:
                "token-push host:port for both environments (default: Apple's, by the channel's environment; the simulator: 127.0.0.1:2197)"
        ),
        ServeOption(
            flag: "--apns-broadcast-host", env: "HERALD_APNS_BROADCAST_HOST", defaultValue: nil,
            help: "broadcast host:port (default: the token host)"),
        ServeOption(
            flag: "--apns-management-host", env: "HERALD_APNS_MANAGEMENT_HOST", defaultValue: nil,
            help: "channel-management host:port (default: Apple's, ports 2195/2196; with --apns-host, that host)"),
        ServeOption(
            flag: "--apns-ca-file", env: "HERALD_APNS_CA_FILE", defaultValue: nil,
            help: "PEM file of roots to trust for APNs (the simulator's certificate); default: the system store"),
        ServeOption(
            flag: "--apns-connections", env: "HERALD_APNS_CONNECTIONS", defaultValue: "4", help: "token-push connections per environment"),
        ServeOption(flag: "--http-threads", env: "HERALD_HTTP_THREADS", defaultValue: "4", help: "API worker threads"),
        ServeOption(
            flag: "--http-max-connections", env: "HERALD_HTTP_MAX_CONNECTIONS", defaultValue: "<file limit − reserve>",
            help:
                "open API connections at most; at the cap the longest-idle one is closed for a new client. Default: the file limit (raised to its hard limit at start) less a reserve for the rest of herald, at most 65536; a value above what the limit allows is refused at start"
        ),
        ServeOption(
            flag: "--http-max-connections-per-ip", env: "HERALD_HTTP_MAX_CONNECTIONS_PER_IP", defaultValue: "128",
            help:
                "open API connections per client address at most; beyond it new ones are closed at once (0: no limit — behind one proxy every client has its address, so set 0 there and limit at the proxy)"
        ),
        ServeOption(
            flag: "--http-timeout", env: "HERALD_HTTP_TIMEOUT", defaultValue: "30",
            help: "seconds an idle or stalled API connection is kept"),
        ServeOption(
            flag: "--webhook-key-file", env: "HERALD_WEBHOOK_KEY_FILE", defaultValue: "<db>.webhook-key",
            help:
                "0600 file of the AES-256-GCM key that seals webhook signing secrets at rest; made when missing. On PostgreSQL every worker must be given the same file (default ./herald.webhook-key)"
        ),
        ServeOption(
            flag: "--webhook-ca-file", env: "HERALD_WEBHOOK_CA_FILE", defaultValue: nil,
            help: "PEM file of roots to trust for https:// webhook receivers; default: the system store"),
        ServeOption(
            flag: "--webhook-allow-private", env: "HERALD_WEBHOOK_ALLOW_PRIVATE", defaultValue: "off",
            help:
                "a flag (env: 1/true): let webhooks reach private networks (RFC 1918, link-local, fc00::/7, 100.64/10); off: refused (no SSRF)"
        ),
        ServeOption(
            flag: "--log-level", env: "HERALD_LOG_LEVEL", defaultValue: "info", help: "debug, info, warning or error (JSON lines on stderr)"
        ),
    ]

    var listen = HostPort(host: "127.0.0.1", port: 8080)
    var metricsListen: HostPort?
    var db = "./herald.db"
    var syncFull = true
    /// PostgreSQL: the shard lease's duration (`HERALD_LEASE_SECONDS`).
    var leaseSeconds = 15
    var adminToken: String?
    var adminTokenFile = ""
    var apnsKeyFile: String?
    var apnsKeyID: String?
    var apnsTeamID: String?
    var apnsTeamsFile: String?
    var apnsHost: HostPort?
    var apnsBroadcastHost: HostPort?
    var apnsManagementHost: HostPort?
    var apnsCAFile: String?
    var apnsConnections = 4
    var httpThreads = 4
    /// Nil: sized from the file limit (`ConnectionBudget`).
    var httpMaxConnections: Int?
    var httpMaxConnectionsPerIP = 128
    var httpTimeout = 30
    var logLevel = LogLevel.info
    var checkConfig = false
    var webhookKeyFile = ""
    var webhookCAFile: String?
    var webhookAllowPrivate = false

    static func read(_ args: inout Arguments) throws -> ServeSettings {
        var s = ServeSettings()
        func hostPort(_ flag: String, _ env: String, listening: Bool = false) throws -> HostPort? {
            guard let v = try args.option(flag, env: env) else { return nil }
            // Port 0 asks the kernel for a free port (the log line `herald.started` says which).
            guard let hp = HostPort(parsing: v), hp.port > 0 || listening else {
                throw UsageError("\(flag) must be HOST:PORT, got '\(v)'")
            }
            return hp
        }
        if let l = try hostPort("--listen", "HERALD_LISTEN", listening: true) { s.listen = l }
        s.metricsListen = try hostPort("--metrics-listen", "HERALD_METRICS_LISTEN", listening: true)
        s.db = try args.option("--db", env: "HERALD_DB", default: s.db)
        let sync = try args.option("--db-sync", env: "HERALD_DB_SYNC", default: "full")
        guard sync == "full" || sync == "normal" else { throw UsageError("--db-sync must be full or normal, got '\(sync)'") }
        s.syncFull = sync == "full"
        s.leaseSeconds = try args.intOption("--lease-seconds", env: "HERALD_LEASE_SECONDS", range: 1...3600) ?? 15
        s.adminToken = try args.option("--admin-token", env: "HERALD_ADMIN_TOKEN")
        s.adminTokenFile =
            try args.option("--admin-token-file", env: "HERALD_ADMIN_TOKEN_FILE") ?? StorageTarget(s.db).defaultAdminTokenFile
        s.apnsKeyFile = try args.option("--apns-key-file", env: "HERALD_APNS_KEY_FILE")
        s.apnsKeyID = try args.option("--apns-key-id", env: "HERALD_APNS_KEY_ID")
        s.apnsTeamID = try args.option("--apns-team-id", env: "HERALD_APNS_TEAM_ID")
        s.apnsTeamsFile = try args.option("--apns-teams-file", env: "HERALD_APNS_TEAMS_FILE")
        s.apnsHost = try hostPort("--apns-host", "HERALD_APNS_HOST")
        s.apnsBroadcastHost = try hostPort("--apns-broadcast-host", "HERALD_APNS_BROADCAST_HOST")
        s.apnsManagementHost = try hostPort("--apns-management-host", "HERALD_APNS_MANAGEMENT_HOST")
        s.apnsCAFile = try args.option("--apns-ca-file", env: "HERALD_APNS_CA_FILE")
        s.apnsConnections = try args.intOption("--apns-connections", env: "HERALD_APNS_CONNECTIONS", range: 1...64) ?? 4
        s.httpThreads = try args.intOption("--http-threads", env: "HERALD_HTTP_THREADS", range: 1...256) ?? 4
        s.httpMaxConnections = try args.intOption("--http-max-connections", env: "HERALD_HTTP_MAX_CONNECTIONS", range: 1...100_000)
        s.httpMaxConnectionsPerIP =
            try args.intOption("--http-max-connections-per-ip", env: "HERALD_HTTP_MAX_CONNECTIONS_PER_IP", range: 0...100_000) ?? 128
        s.httpTimeout = try args.intOption("--http-timeout", env: "HERALD_HTTP_TIMEOUT", range: 1...3600) ?? 30
        let level = try args.option("--log-level", env: "HERALD_LOG_LEVEL", default: "info")
        guard let l = LogLevel(name: level) else { throw UsageError("--log-level must be debug, info, warning or error") }
        s.logLevel = l
        s.checkConfig = args.flag("--check-config")
        s.webhookKeyFile =
            try args.option("--webhook-key-file", env: "HERALD_WEBHOOK_KEY_FILE") ?? StorageTarget(s.db).defaultWebhookKeyFile
        s.webhookCAFile = try args.option("--webhook-ca-file", env: "HERALD_WEBHOOK_CA_FILE")
        s.webhookAllowPrivate = args.flag("--webhook-allow-private", env: "HERALD_WEBHOOK_ALLOW_PRIVATE")
        let keyParts = [s.apnsKeyFile, s.apnsKeyID, s.apnsTeamID].filter { $0 != nil }.count
        if keyParts != 0 && s.apnsTeamsFile != nil {
            // Two sources of keys: which one owns a bundle would be a guess. One or the other.
            throw UsageError(
                "give either --apns-teams-file (HERALD_APNS_TEAMS_FILE) or the single key (--apns-key-file, --apns-key-id, --apns-team-id), not both: put the single key's team in the teams file"
            )
        }
        if keyParts != 0 && keyParts != 3 {
            throw UsageError(
                "APNs credentials need all three of --apns-key-file, --apns-key-id and --apns-team-id (or HERALD_APNS_KEY_FILE, _KEY_ID, _TEAM_ID)"
            )
        }
        return s
    }

    static var helpText: String {
        let rows = options.map { o in
            "  \(o.flag) VALUE\n" + String(repeating: " ", count: 8) + o.help + "\n" + String(repeating: " ", count: 8)
                + "env \(o.env)" + (o.defaultValue.map { ", default \($0)" } ?? "")
        }
        return """
            Usage: herald serve [options]

            Runs Herald: the HTTP API, the fan-out scheduler and the APNs connections. Stops
            cleanly on SIGINT or SIGTERM (events in flight resume on the next start).

            Options (each also read from its environment variable; the flag wins):
            \(rows.joined(separator: "\n"))
              --check-config
                    validate the configuration (key, files, addresses, database) and exit:
                    0 valid, 1 not

            Without APNs credentials the API works and every push fails with
            MissingProviderToken. For a local APNs, run 'herald apns-sim' and use the
            variables it prints.

            Example:
              HERALD_APNS_KEY_FILE=AuthKey_ABC123DEFG.p8 HERALD_APNS_KEY_ID=ABC123DEFG \\
              HERALD_APNS_TEAM_ID=DEF123GHIJ herald serve --listen 127.0.0.1:8080
            """
    }
}
