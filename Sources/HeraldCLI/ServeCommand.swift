import Foundation
import HeraldCore
import HeraldCrypto
import HeraldHTTPServer
import HeraldStore

/// `herald serve`: runs the service until SIGINT/SIGTERM.
enum ServeCommand: HeraldCommand {
    static let name = "serve"
    static let summary = "run the service: HTTP API, fan-out scheduler, APNs connections"
    static var help: String { ServeSettings.helpText }

    static func run(_ args: inout Arguments, console: Console) throws -> Int32 {
        let settings = try ServeSettings.read(&args)
        try args.finish()
        let logger = Logger(subsystem: "herald", sink: .standardError(level: settings.logLevel))
        if settings.checkConfig { return try checkConfig(settings, console: console, logger: logger) }
        SignalWait.blockTerminationSignals()
        let service = try HeraldService(settings, logger: logger, console: console)
        let signal = SignalWait.waitForTermination()
        logger.info("herald.stopping", ["signal": .string(signal == SIGINT ? "SIGINT" : "SIGTERM")])
        service.stop()
        return ExitCode.ok
    }

    /// Validates without serving: the key signs, files are readable, the database opens
    /// and migrates (a copy is not made: migration is what `serve` would do anyway).
    static func checkConfig(_ s: ServeSettings, console: Console, logger: Logger) throws -> Int32 {
        var problems: [String] = []
        if s.apnsKeyFile != nil || s.apnsTeamsFile != nil {
            do { _ = try HeraldService.apnsTeams(s, logger: .discard) } catch { problems.append("\(error)") }
        } else {
            problems.append(
                "no APNs credentials (HERALD_APNS_KEY_FILE, HERALD_APNS_KEY_ID, HERALD_APNS_TEAM_ID, or HERALD_APNS_TEAMS_FILE): pushes would fail"
            )
        }
        if let ca = s.apnsCAFile, !FileManager.default.isReadableFile(atPath: ca) { problems.append("cannot read --apns-ca-file \(ca)") }
        do {
            // What serve would allow: its soft limit raised to this hard one.
            _ = try ConnectionBudget.plan(
                fileLimit: FileLimit.hard, requested: s.httpMaxConnections, httpThreads: s.httpThreads,
                apnsConnections: s.apnsConnections, closingAllowance: HTTPServerConfig.maxClosingAllowance)
        } catch {
            problems.append("\(error)")
        }
        do {
            try StorageTarget(s.db).open().close()
        } catch {
            problems.append("database \(StorageTarget(s.db).display): \(error)")
        }
        if problems.isEmpty {
            console.print(
                "configuration ok: API on \(s.listen), database \(StorageTarget(s.db).display), APNs \(s.apnsHost?.description ?? "Apple")")
            return ExitCode.ok
        }
        for p in problems { console.error("herald serve --check-config: \(p)") }
        return ExitCode.failure
    }
}

/// `herald migrate`: applies the embedded migrations to a database.
enum MigrateCommand: HeraldCommand {
    static let name = "migrate"
    static let summary = "apply the schema migrations to a database"
    static let help = """
        Usage: herald migrate [--db PATH|URL]

        Applies Migrations/*.sql (built into herald) that the database lacks, in order,
        each in its own transaction; `serve` does the same on start. A database newer than
        this herald is refused.

          --db PATH    the database (env HERALD_DB, default ./herald.db): a SQLite file, or
                       a postgresql:// URL (password in PGPASSWORD or ~/.pgpass)
        """

    static func run(_ args: inout Arguments, console: Console) throws -> Int32 {
        let db = try args.option("--db", env: "HERALD_DB", default: "./herald.db")
        try args.finish()
        let target = StorageTarget(db)
        do {
            let (applied, schema) = try target.migrate()
            console.print(
                applied.isEmpty
                    ? "\(target.display): up to date (schema \(schema))"
                    : "\(target.display): applied \(applied.map(String.init).joined(separator: ", ")) (schema \(schema))")
            return ExitCode.ok
        } catch {
            throw CommandFailure("\(target.display): \(error)")
        }
    }
}
