import Foundation
import HeraldCore

/// `herald channels create|list|show|close|reconcile`.
enum ChannelsCommand: HeraldCommand {
    static let name = "channels"
    static let summary = "create, list, show, close and reconcile channels (admin)"
    static let modes = ["fanout", "broadcast", "hybrid"]
    static let environments = ["sandbox", "production"]
    static let storagePolicies = ["none", "most-recent"]

    static func run(_ args: inout Arguments, console: Console) throws -> Int32 {
        let opts = try AdminOptions.read(&args)
        let sub = try args.positional("sub-command: create, list, show, close or reconcile")
        switch sub {
        case "create": return try create(&args, opts, console)
        case "list": return try list(&args, opts, console)
        case "show", "close": return try showOrClose(sub, &args, opts, console)
        case "reconcile": return try reconcile(&args, opts, console)
        default: throw UsageError("unknown sub-command '\(sub)': use create, list, show, close or reconcile")
        }
    }

    static func create(_ args: inout Arguments, _ opts: AdminOptions, _ console: Console) throws -> Int32 {
        let bundle = try args.option("--bundle-id")
        let mode = try args.choice("--mode", modes)
        let env = try args.choice("--env", environments)
        let storage = try args.choice("--storage", storagePolicies)
        let noCatchUp = args.flag("--no-catch-up")
        let interval = try args.intOption("--min-interval-ms", range: 0...86_400_000)
        let budget = try args.intOption("--priority10-budget", range: 0...100_000)
        let id = try args.positional("channel ID")
        try args.finish()
        guard let bundle, !bundle.isEmpty else { throw UsageError("--bundle-id is required (the app's bundle ID)") }
        let body = JSON.object([
            ("id", .string(id)), ("bundle_id", .string(bundle)), ("mode", mode.map(JSON.string)),
            ("environment", env.map(JSON.string)), ("storage_policy", storage.map(JSON.string)),
            ("catch_up", noCatchUp ? .bool(false) : nil), ("min_interval_ms", interval.map { JSON.int(Int64($0)) }),
            ("priority10_budget_per_hour", budget.map { JSON.int(Int64($0)) }),
        ])
        let channel = try opts.client().call("POST", "/v1/channels", body: body)
        if opts.json {
            console.print(TextOutput.prettyJSON(channel))
        } else {
            console.print("created channel \(TextOutput.text(channel["id"]))")
            console.print(ChannelFormat.fields(channel))
        }
        return ExitCode.ok
    }

    static func list(_ args: inout Arguments, _ opts: AdminOptions, _ console: Console) throws -> Int32 {
        try args.finish()
        let reply = try opts.client().call("GET", "/v1/channels")
        if opts.json {
            console.print(TextOutput.prettyJSON(reply))
        } else if let channels = reply["channels"]?.arrayValue, !channels.isEmpty {
            console.print(ChannelFormat.table(channels))
        } else {
            console.print("no channels yet: create one with `herald channels create ID --bundle-id B`")
        }
        return ExitCode.ok
    }

    static func showOrClose(_ sub: String, _ args: inout Arguments, _ opts: AdminOptions, _ console: Console) throws -> Int32 {
        let id = try args.positional("channel ID")
        try args.finish()
        let path = "/v1/channels/" + AdminClient.segment(id)
        let channel = try opts.client().call(sub == "show" ? "GET" : "DELETE", path)
        if opts.json {
            console.print(TextOutput.prettyJSON(channel))
        } else {
            if sub == "close" { console.print("closed channel \(id)") }
            console.print(ChannelFormat.fields(channel))
        }
        return ExitCode.ok
    }
}
