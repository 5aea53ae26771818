import Foundation
import HeraldCore
import HeraldNet
import HeraldSender
import HeraldSimulator

/// `herald apns-sim`: runs the APNs simulator (and its control port) until SIGINT/SIGTERM.
enum APNSSimCommand: HeraldCommand {
    static let name = "apns-sim"
    static let summary = "run a local APNs simulator (HTTP/2 + TLS) to point Herald at"

    /// What the flags ask for.
    struct Settings {
        var listen = HostPort(host: "127.0.0.1", port: 2197)
        var control: HostPort? = HostPort(host: "127.0.0.1", port: 2198)
        var directory = "./apns-sim"
        var maxStreams: UInt32 = 1000
        var streamsBeforeAuth: UInt32 = 1
        var threads = 1
        var faults = SimulatorFaults()
        var ledger = true
        var teamsFile: String?

        static func read(_ args: inout Arguments) throws -> Settings {
            var s = Settings()
            let listen = try args.option("--listen", env: "HERALD_SIM_LISTEN", default: s.listen.description)
            guard let l = HostPort(parsing: listen) else { throw UsageError("--listen must be HOST:PORT, got '\(listen)'") }
            s.listen = l
            let control = try args.option("--control", env: "HERALD_SIM_CONTROL", default: s.control!.description)
            if control == "none" {
                s.control = nil
            } else {
                guard let c = HostPort(parsing: control) else {
                    throw UsageError("--control must be HOST:PORT or none, got '\(control)'")
                }
                s.control = c
            }
            s.directory = try args.option("--dir", env: "HERALD_SIM_DIR", default: s.directory)
            s.maxStreams = UInt32(try args.intOption("--max-streams", range: 1...1_000_000) ?? 1000)
            s.streamsBeforeAuth = UInt32(try args.intOption("--streams-before-auth", range: 1...1_000_000) ?? 1)
            s.threads = try args.intOption("--threads", range: 1...64) ?? 1
            if let spec = try args.option("--faults", env: "HERALD_SIM_FAULTS") {
                switch SimulatorFaults.parse(spec) {
                case .success(let f): s.faults = f
                case .failure(let e): throw UsageError(e.description)
                }
            }
            s.ledger = !args.flag("--no-ledger")
            s.teamsFile = try args.option("--teams-file", env: "HERALD_SIM_TEAMS_FILE")
            return s
        }
    }

    static func run(_ args: inout Arguments, console: Console) throws -> Int32 {
        let settings = try Settings.read(&args)
        try args.finish()
        // Before any thread exists, so every thread the simulator starts leaves the signals
        // pending for sigwait.
        SignalWait.blockTerminationSignals()
        let running = try start(settings, console: console, logger: Logger(subsystem: "apns-sim", sink: .standardError()))
        console.print("Stop with Ctrl-C.")
        let signal = SignalWait.waitForTermination()
        console.error("apns-sim: \(signal == SIGINT ? "SIGINT" : "SIGTERM"), shutting down")
        running.stop()
        return ExitCode.ok
    }

    /// A started simulator and its control interface.
    final class Running: Sendable {
        let simulator: APNSSimulator
        let control: SimulatorControl?
        let files: SimulatorFiles

        init(simulator: APNSSimulator, control: SimulatorControl?, files: SimulatorFiles) {
            self.simulator = simulator
            self.control = control
            self.files = files
        }

        func stop() {
            control?.stop()
            simulator.shutdown()
        }
    }

    /// Prepares the files, starts the simulator and the control port, prints where
    /// everything is. Throws `CommandFailure` naming what could not be set up.
    static func start(_ s: Settings, console: Console, logger: Logger) throws -> Running {
        let directory = URL(fileURLWithPath: s.directory).standardizedFileURL.path
        let files: SimulatorFiles
        var config: SimulatorConfig
        do {
            files = try SimulatorFiles.prepare(directory: directory)
            config = try files.config()
        } catch {
            throw CommandFailure("cannot prepare the simulator's files in \(directory): \(error)")
        }
        config.listen = s.listen
        config.control = s.control
        config.maxConcurrentStreams = s.maxStreams
        config.streamsBeforeAuth = s.streamsBeforeAuth
        config.threads = s.threads
        config.faults = s.faults
        config.recordLedger = s.ledger
        if let path = s.teamsFile {
            do {
                config.otherTeams = try APNSTeamsFile.load(path: path).map { e in
                    SimulatorTeam(
                        teamID: e.entry.teamID, keyID: e.entry.keyID, publicKey: e.credentials.key.publicKey,
                        bundleIDs: Set(e.entry.bundleIDs))
                }
            } catch {
                throw CommandFailure("\(error)")
            }
        }
        let simulator: APNSSimulator
        do {
            simulator = try APNSSimulator(config: config, logger: logger)
        } catch {
            throw CommandFailure("cannot listen on \(s.listen) for APNs: \(error)")
        }
        var control: SimulatorControl?
        if let c = s.control {
            do {
                control = try SimulatorControl(simulator: simulator, listen: c, logger: logger)
            } catch {
                simulator.shutdown()
                throw CommandFailure("cannot listen on \(c) for the control interface: \(error) (--control none turns it off)")
            }
        }
        console.print(banner(simulator.address, control: control?.address, files: files, settings: s))
        return Running(simulator: simulator, control: control, files: files)
    }

    /// Where things are and the environment that points Herald at this simulator.
    static func banner(_ apns: HostPort, control: HostPort?, files: SimulatorFiles, settings: Settings) -> String {
        let reach = reachable(apns)
        var lines = [
            "APNs simulator listening on \(apns) (HTTP/2 over TLS, \(settings.threads) thread(s), "
                + "\(settings.maxStreams) streams per connection\(settings.ledger ? "" : ", no ledger"))"
        ]
        if let control {
            lines.append("control interface: http://\(reachable(control)) (GET /stats, /tokens, /tokens/HEX; PUT /faults; POST /reset)")
        }
        lines += [
            "faults: " + (settings.faults.spec.isEmpty ? "none" : settings.faults.spec),
            "files in \(files.directory):",
            "  TLS certificate  \(files.certificateFile)  (the CA file Herald must trust)",
            "  APNs key (.p8)   \(files.apnsKeyFile)  (key id \(files.keyID), team id \(files.teamID))",
            "",
            "Point Herald at it:",
            "  HERALD_APNS_HOST=\(reach) HERALD_APNS_CA_FILE=\(files.certificateFile) "
                + "HERALD_APNS_KEY_FILE=\(files.apnsKeyFile) HERALD_APNS_KEY_ID=\(files.keyID) "
                + "HERALD_APNS_TEAM_ID=\(files.teamID) herald serve",
        ]
        return lines.joined(separator: "\n")
    }

    /// The address a local client dials: a wildcard listen address becomes loopback.
    static func reachable(_ a: HostPort) -> HostPort {
        switch a.host {
        case "0.0.0.0": HostPort(host: "127.0.0.1", port: a.port)
        case "::", "[::]": HostPort(host: "::1", port: a.port)
        default: a
        }
    }
}
