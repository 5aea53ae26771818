import Foundation
import HeraldAPI
import HeraldAPNS
import HeraldCore
import HeraldCrypto
import HeraldFanout
import HeraldHTTPServer
import HeraldNet
import HeraldSQL
import HeraldSender
import HeraldStore
import HeraldWebhooks

/// A running Herald: store, pools, scheduler and API, started in dependency order and
/// stopped in reverse. Used by `herald serve` and `herald demo`.
final class HeraldService: Sendable {
    let store: any HeraldStorage
    let closeStore: @Sendable () -> Void
    let pools: APNSPools?
    let engine: FanoutEngine
    /// Scheduled events, channel expiry and the subscription sweep (once per database).
    let duty: DutyRunner
    let webhooks: WebhookHub
    let api: HTTPServer
    let metricsServer: HTTPServer?
    let logger: Logger
    let adminToken: String

    /// Starts everything; throws `CommandFailure` with what went wrong.
    init(_ s: ServeSettings, logger: Logger, console: Console) throws {
        self.logger = logger
        // First: a cap the file limit cannot hold stops the start before anything opens.
        let budget = try Self.connectionBudget(s, logger: logger)
        let metrics = MetricsRegistry()
        var dbOptions = DatabaseOptions()
        dbOptions.synchronous = s.syncFull ? .full : .normal
        let target = StorageTarget(s.db)
        let opened = try target.open(sqliteOptions: dbOptions, leaseSeconds: s.leaseSeconds)
        store = opened.storage
        closeStore = opened.close
        opened.sqlite?.db.registerMetrics(in: metrics)
        adminToken = try Self.adminToken(s, console: console, logger: logger)
        let teams = try Self.apnsTeams(s, logger: logger)
        if let teams {
            var a = APNSSettings()
            a.tokenHost = s.apnsHost
            a.broadcastHost = s.apnsBroadcastHost
            a.managementHost = s.apnsManagementHost ?? s.apnsHost
            a.caFile = s.apnsCAFile
            a.connections = s.apnsConnections
            pools = APNSPools(
                settings: a, teams: teams.teams, source: teams.source, logger: logger.with(subsystem: "sender"), metrics: metrics)
        } else {
            pools = nil
            logger.warning(
                "herald.no_apns_credentials",
                [
                    "hint":
                        "set HERALD_APNS_KEY_FILE, HERALD_APNS_KEY_ID and HERALD_APNS_TEAM_ID (or HERALD_APNS_TEAMS_FILE); pushes fail until then"
                ])
        }
        let transports: PushTransports = pools.map { PoolTransports(pools: $0) } ?? NoAPNSTransports()
        var fanoutConfig = FanoutConfig()
        fanoutConfig.sweepsSubscriptions = false  // the duty runner sweeps them
        engine = FanoutEngine(store: store, transports: transports, config: fanoutConfig, logger: logger, metrics: metrics)
        webhooks = try Self.webhookHub(s, store: store, metrics: metrics, logger: logger)
        engine.observer.set(webhooks)
        var apiConfig = APIConfig()
        apiConfig.http.host = s.listen.host
        apiConfig.http.port = UInt16(s.listen.port)
        apiConfig.http.threads = s.httpThreads
        apiConfig.http.maxConnections = budget.maxConnections
        apiConfig.http.connectionTimeoutSeconds = s.httpTimeout
        apiConfig.http.perIPConnectionLimit = s.httpMaxConnectionsPerIP
        apiConfig.adminToken = Redacted(adminToken)
        apiConfig.apnsTeams = teams?.source == nil ? nil : self.pools?.routing
        let pools = self.pools
        let handler = APIServer(
            config: apiConfig, store: store, engine: engine, channelManagers: { env in pools?.channelManager(env) },
            metrics: metrics, logger: logger, webhooks: webhooks)
        duty = DutyRunner(api: handler, metrics: metrics, logger: logger)
        Self.processMetrics(metrics)
        do {
            api = try HTTPServer(config: apiConfig.http, logger: logger.with(subsystem: "http"), handler: handler)
            api.registerMetrics(in: metrics, listener: "api")
            if let m = s.metricsListen {
                var mc = HTTPServerConfig(host: m.host, port: UInt16(m.port), threads: 1, maxConnections: 64)
                mc.maxBodyBytes = 1024
                let onlyHealth = HTTPHandlerFunction { req in
                    ["/metrics", "/healthz", "/readyz"].contains(req.path)
                        ? handler.handle(req)
                        : .error(404, code: "not_found", message: "this listener serves /metrics, /healthz and /readyz")
                }
                metricsServer = try HTTPServer(config: mc, logger: logger.with(subsystem: "http"), handler: onlyHealth)
            } else {
                metricsServer = nil
            }
        } catch {
            engine.stop()
            pools?.shutdown()
            closeStore()
            throw CommandFailure("cannot listen: \(error)")
        }
        engine.start()
        webhooks.start()
        do {
            try duty.start()
            try api.start()
            try metricsServer?.start()
        } catch {
            stop()
            throw CommandFailure("cannot start the API: \(error)")
        }
        logger.info(
            "herald.started",
            [
                "api": .string("http://\(HostPort(host: api.boundAddress, port: Int(api.port)))"),
                "metrics": metricsServer.map { .string("http://\(HostPort(host: $0.boundAddress, port: Int($0.port)))") } ?? .null,
                "db": .string(target.display), "apns": .string(teams == nil ? "not configured" : (s.apnsHost?.description ?? "Apple")),
                "apns_teams": pools.map { .array($0.routing.teamIDs.map(JSON.string)) } ?? .null,
            ])
    }

    /// Stops taking requests, then the scheduler (events in flight stay `sending` and
    /// resume on the next start), the connections and the database.
    func stop() {
        api.stop()
        metricsServer?.stop()
        duty.stop()
        engine.stop()
        webhooks.stop()
        pools?.shutdown()
        closeStore()
        logger.info("herald.stopped")
    }

    /// Raises the soft file limit to the hard one and sizes the API's connection cap from
    /// it (logged as `herald.connection_budget`). Throws `CommandFailure` when an explicit
    /// `--http-max-connections` is more than the limit allows.
    static func connectionBudget(_ s: ServeSettings, logger: Logger) throws -> ConnectionBudget {
        let limit = FileLimit.raiseSoftToHard()
        let budget: ConnectionBudget
        do {
            budget = try ConnectionBudget.plan(
                fileLimit: limit.soft, requested: s.httpMaxConnections, httpThreads: s.httpThreads,
                apnsConnections: s.apnsConnections, closingAllowance: HTTPServerConfig.maxClosingAllowance)
        } catch {
            throw CommandFailure("\(error)")
        }
        var fields: [String: JSON] = [
            "max_connections": .int(Int64(budget.maxConnections)), "max_connections_per_ip": .int(Int64(s.httpMaxConnectionsPerIP)),
            "source": .string(budget.explicit ? "setting" : "file_limit"), "file_limit": .int(Int64(limit.soft)),
            "file_limit_before": .int(Int64(limit.before)), "file_limit_hard": .int(Int64(limit.hard)),
            "reserve": .int(Int64(budget.reserve)), "allowed": .int(Int64(budget.allowed)),
        ]
        if budget.isLow {
            fields["hint"] = "the file limit leaves little room for API connections: raise the hard limit (LimitNOFILE=, --ulimit nofile=)"
            logger.warning("herald.connection_budget", fields)
        } else {
            logger.info("herald.connection_budget", fields)
        }
        return budget
    }

    static func jwtProvider(_ s: ServeSettings, logger: Logger) throws -> JWTProvider? {
        guard let file = s.apnsKeyFile, let kid = s.apnsKeyID, let team = s.apnsTeamID else { return nil }
        let key: P256PrivateKey
        do {
            key = try P256PrivateKey(contentsOfFile: file)
        } catch {
            throw CommandFailure("cannot use the APNs key \(file): \(error)")
        }
        if kid.count != 10 || team.count != 10 {
            logger.warning("herald.apns_ids_unusual", ["hint": "Apple's Key ID and Team ID are 10 characters each"])
        }
        let jwt = JWTProvider(credentials: APNSCredentials(keyID: kid, teamID: team, key: key), logger: logger.with(subsystem: "sender"))
        do {
            _ = try jwt.current()
        } catch {
            throw CommandFailure("the APNs key \(file) cannot sign: \(error)")
        }
        return jwt
    }

    /// The webhooks: the sealing key from its file (made there, 0600, when missing).
    static func webhookHub(_ s: ServeSettings, store: any HeraldStorage, metrics: MetricsRegistry, logger: Logger) throws -> WebhookHub {
        let box: SecretBox
        let file = s.webhookKeyFile.isEmpty ? StorageTarget(s.db).defaultWebhookKeyFile : s.webhookKeyFile
        do {
            let (b, created) = try SecretBox.loadOrCreateKeyFile(file)
            box = b
            if created { logger.info("herald.webhook_key_created", ["file": .string(file)]) }
        } catch {
            throw CommandFailure("cannot use the webhook key file \(file): \(error)")
        }
        var c = WebhookConfig()
        c.policy.allowPrivate = s.webhookAllowPrivate
        c.poster.caFile = s.webhookCAFile
        c.poster.policy = c.policy
        return WebhookHub(store: store, box: box, config: c, metrics: metrics, logger: logger)
    }

    /// The admin token: given, or read from its file, or made now and written there (0600).
    static func adminToken(_ s: ServeSettings, console: Console, logger: Logger) throws -> String {
        if let t = s.adminToken, !t.isEmpty { return t }
        if FileManager.default.fileExists(atPath: s.adminTokenFile) {
            do {
                let t = try SecretFile.read(s.adminTokenFile).trimmingCharacters(in: .whitespacesAndNewlines)
                if !t.isEmpty { return t }
            } catch {
                throw CommandFailure("cannot read the admin token file \(s.adminTokenFile): \(error)")
            }
        }
        let token = "hk_admin_" + SecureRandom.token(bytes: 32)
        do {
            try SecretFile.write(token + "\n", to: s.adminTokenFile)
        } catch {
            throw CommandFailure("cannot write the admin token file \(s.adminTokenFile): \(error)")
        }
        logger.info("herald.admin_token_created", ["file": .string(s.adminTokenFile)])
        console.error("herald: a new admin token was written to \(s.adminTokenFile) (mode 0600); the CLI reads it from there")
        return token
    }

    /// Process figures (Prometheus' conventional names).
    static func processMetrics(_ m: MetricsRegistry) {
        let start = SystemClock().now()
        m.sampledGauge("process_start_time_seconds", help: "Start time of the process since the epoch.") { start }
        m.sampledGauge("process_resident_memory_bytes", help: "Resident memory size in bytes.") {
            guard let s = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8),
                let pages = s.split(separator: " ").dropFirst().first.flatMap({ Double($0) })
            else { return 0 }
            return pages * Double(sysconf(Int32(_SC_PAGESIZE)))
        }
        m.sampledCounter("process_cpu_seconds_total", help: "User and system CPU time spent in seconds.") {
            var ru = rusage()
            getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &ru)
            return Double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + Double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6
        }
        m.sampledGauge("process_open_fds", help: "Number of open file descriptors.") {
            Double((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0)
        }
    }
}
