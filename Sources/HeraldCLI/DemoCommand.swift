import Foundation
import HeraldCore
import HeraldNet
import HeraldSimulator

/// `herald demo`: the whole loop on this machine — an APNs simulator, the service, a
/// channel with simulated subscribers, and a short match played by a publisher over the
/// HTTP API — then what was delivered.
enum DemoCommand: HeraldCommand {
    static let name = "demo"
    static let summary = "run the whole loop on this machine: simulator, server, a demo match"
    static let help = """
        Usage: herald demo [--subscribers N] [--dir DIR] [--pace SECONDS]

        Starts an APNs simulator and a Herald server on loopback (ephemeral ports, a
        temporary database), creates a channel, registers N simulated Live Activities (and
        a few push-to-start tokens), then publishes a short match through the HTTP API as a
        sports feed would — kick-off, goals, full time — and prints what each event reached
        and what the simulator received. Takes well under a minute.

          --subscribers N   activity tokens to register (default 3000, up to 1000000)
          --dir DIR         keep the database and simulator files there (default: a
                            temporary directory, removed afterwards)
          --pace SECONDS    pause between match events (default 0.4)
        """

    struct Play {
        let minute: Int
        let headline: String
        let aps: JSON
    }

    static func run(_ args: inout Arguments, console: Console) throws -> Int32 {
        let subscribers = try args.intOption("--subscribers", range: 1...1_000_000) ?? 3000
        let keepDir = try args.option("--dir")
        let paceText = try args.option("--pace", default: "0.4")
        guard let pace = Double(paceText), pace >= 0, pace <= 10 else { throw UsageError("--pace must be 0-10 seconds") }
        try args.finish()

        let dir = keepDir ?? NSTemporaryDirectory() + "herald-demo-\(getpid())"
        defer { if keepDir == nil { try? FileManager.default.removeItem(atPath: dir) } }
        let quiet = Logger(subsystem: "demo", sink: .standardError(level: .warning))
        let started = Date()

        console.print("Herald demo — everything on loopback, nothing leaves this machine.\n")
        // 1. The APNs simulator, with its own TLS certificate and .p8 key pair.
        let files = try SimulatorFiles.prepare(directory: dir + "/apns-sim")
        var simConfig = try files.config()
        simConfig.listen = HostPort(host: "127.0.0.1", port: 0)
        simConfig.control = nil
        let sim = try APNSSimulator(config: simConfig, logger: quiet)
        defer { sim.shutdown() }
        console.print("• APNs simulator on \(sim.address) (HTTP/2 + TLS, JWT checked against \(files.keyID))")

        // 2. Herald, pointed at it.
        var s = ServeSettings()
        s.listen = HostPort(host: "127.0.0.1", port: 0)
        s.db = dir + "/herald.db"
        s.adminTokenFile = s.db + ".admin-token"
        s.apnsKeyFile = files.apnsKeyFile
        s.apnsKeyID = files.keyID
        s.apnsTeamID = files.teamID
        s.apnsHost = sim.address
        s.apnsCAFile = files.certificateFile
        s.apnsConnections = 2
        let service = try HeraldService(s, logger: quiet, console: Console(capture: true))
        defer { service.stop() }
        let api = URL(string: "http://\(HostPort(host: service.api.boundAddress, port: Int(service.api.port)))")!
        console.print("• Herald API on \(api.absoluteString), database \(s.db)")
        let admin = AdminClient(server: api, token: service.adminToken, tokenSource: "the demo", timeout: 30)

        // 3. A channel and its audience, as an app backend would register them.
        let channel = "demo-final-\(Int(started.timeIntervalSince1970))"
        try admin.call(
            "POST", "/v1/channels", body: ["id": .string(channel), "bundle_id": "com.example.matchday", "environment": "sandbox"])
        let publisherKey = try admin.call(
            "POST", "/v1/keys", body: ["role": "publisher", "channels": [.string(channel)], "label": "demo feed"])
        let publisher = AdminClient(
            server: api, token: publisherKey["secret"]?.stringValue ?? "", tokenSource: "the demo feed", timeout: 30)
        var g = SystemRandomNumberGenerator()
        func token() -> String { Hex.encode((0..<32).map { _ in UInt8.random(in: 0...255, using: &g) }) }
        let activityTokens = (0..<subscribers).map { _ in token() }
        let starters = (0..<max(1, subscribers / 20)).map { _ in token() }
        let t0 = Date()
        for chunk in stride(from: 0, to: activityTokens.count, by: 50_000) {
            let entries = activityTokens[chunk..<min(chunk + 50_000, activityTokens.count)].map { JSON.string($0) }
            try admin.call("POST", "/v1/channels/\(channel)/subscriptions:batch", body: ["subscribe": .array(Array(entries))])
        }
        try admin.call(
            "POST", "/v1/channels/\(channel)/subscriptions:batch",
            body: ["subscribe": .array(starters.map { .object(["token": .string($0), "kind": "push-to-start"]) })])
        console.print(
            "• channel \(channel): \(fmt(subscribers)) Live Activities + \(starters.count) push-to-start tokens registered in "
                + "\(ms(Date().timeIntervalSince(t0)))\n")

        // 4. The match, as a sports feed publishes it.
        let plays: [Play] = [
            Play(
                minute: 0, headline: "Kick-off soon (start → push-to-start tokens)",
                aps: [
                    "event": "start", "attributes-type": "MatchAttributes", "attributes": ["matchID": "final-2026"],
                    "content-state": ["home": 0, "away": 0, "minute": 0, "status": "pre"],
                    "alert": ["title": "Kick-off soon", "body": "Follow the final live"],
                ]),
            Play(
                minute: 1, headline: "Kick-off",
                aps: ["event": "update", "content-state": ["home": 0, "away": 0, "minute": 1, "status": "live"]]),
            Play(
                minute: 23, headline: "GOAL! Home lead 1-0",
                aps: [
                    "event": "update", "content-state": ["home": 1, "away": 0, "minute": 23, "status": "live"],
                    "alert": ["title": "Goal!", "body": "Home 1-0"], "relevance-score": 100,
                ]),
            Play(
                minute: 45, headline: "Half time",
                aps: ["event": "update", "content-state": ["home": 1, "away": 0, "minute": 45, "status": "half-time"]]),
            Play(
                minute: 67, headline: "GOAL! Away level 1-1",
                aps: [
                    "event": "update", "content-state": ["home": 1, "away": 1, "minute": 67, "status": "live"],
                    "alert": ["title": "Goal!", "body": "Away 1-1"], "relevance-score": 100,
                ]),
            Play(
                minute: 88, headline: "GOAL! Home 2-1",
                aps: [
                    "event": "update", "content-state": ["home": 2, "away": 1, "minute": 88, "status": "live"],
                    "alert": ["title": "Goal!", "body": "Home 2-1"], "relevance-score": 100,
                ]),
            Play(
                minute: 90, headline: "Full time (end)",
                aps: [
                    "event": "end", "content-state": ["home": 2, "away": 1, "minute": 90, "status": "full-time"],
                    "alert": ["title": "Full time", "body": "Home win, 2-1"],
                ]),
        ]
        let matchStart = Date()
        for play in plays {
            let t = Date()
            let accepted = try publisher.call("POST", "/v1/channels/\(channel)/events", body: ["aps": play.aps])
            guard let id = accepted["event_id"]?.stringValue else { throw CommandFailure("no event id in \(accepted.text)") }
            var event: JSON = .null
            while true {
                event = try publisher.call("GET", "/v1/channels/\(channel)/events/\(id)")
                if let st = event["state"]?.stringValue, ["done", "failed", "superseded"].contains(st) { break }
                usleep(5_000)
            }
            let sent = event["sent"]?.intValue ?? 0
            let targets = event["targets"]?.intValue ?? 0
            let took = Date().timeIntervalSince(t)
            console.print(
                String(format: "%3d'  %@", play.minute, play.headline.padding(toLength: 46, withPad: " ", startingAt: 0))
                    + "→ \(event["state"]?.stringValue ?? "?") \(fmt(Int(sent)))/\(fmt(Int(targets))) in \(ms(took))")
            if pace > 0 { usleep(UInt32(pace * 1e6)) }
        }
        let matchTime = Date().timeIntervalSince(matchStart)

        // 5. What the simulated devices hold.
        let stats = sim.stats()
        let ended = activityTokens.filter { sim.pushes(to: $0).last?.event == "end" }.count
        let startedActivities = starters.filter { sim.pushes(to: $0).first?.event == "start" }.count
        console.print(
            """

            The simulator (APNs) accepted \(fmt(stats.accepted)) pushes over \(stats.connections) connection(s):
              \(fmt(ended)) of \(fmt(subscribers)) Live Activities show the final score (their last push is the end event),
              \(fmt(startedActivities)) of \(starters.count) push-to-start tokens got the start.
            Every push carried APNs' Live Activity headers (apns-push-type liveactivity, topic
            com.example.matchday.push-type.liveactivity) and a JWT the simulator verified.

            The match took \(ms(matchTime)) (with \(ms(pace)) pauses); the whole demo \(ms(Date().timeIntervalSince(started))).
            Try it by hand: herald apns-sim, then herald serve with the variables it prints;
            herald --help lists the commands.
            """)
        return ended == subscribers && startedActivities == starters.count ? ExitCode.ok : ExitCode.failure
    }

    static func fmt(_ n: Int) -> String {
        let f = NumberFormatter()
        f.numberStyle = .decimal
        f.groupingSeparator = ","
        return f.string(from: NSNumber(value: n)) ?? String(n)
    }

    static func ms(_ s: Double) -> String { s < 1 ? "\(Int((s * 1000).rounded())) ms" : String(format: "%.1f s", s) }
}
