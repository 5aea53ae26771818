import Foundation
import HeraldCore

/// `herald subs add|import|remove`.
enum SubsCommand: HeraldCommand {
    static let name = "subs"
    static let summary = "add, import and remove subscriptions (push tokens) of a channel"
    static let kinds = ["activity", "push-to-start"]

    static func run(_ args: inout Arguments, console: Console) throws -> Int32 {
        let opts = try AdminOptions.read(&args)
        let sub = try args.positional("sub-command: add, import or remove")
        switch sub {
        case "add": return try add(&args, opts, console)
        case "import": return try SubsImport.run(&args, opts, console)
        case "remove": return try remove(&args, opts, console)
        default: throw UsageError("unknown sub-command '\(sub)': use add, import or remove")
        }
    }

    /// The subscription fields shared by `add` and `import`.
    struct Entry {
        var kind: String?
        var expiresAt: Int64?

        static func read(_ args: inout Arguments) throws -> Entry {
            let kind = try args.choice("--kind", kinds)
            var expires: Int64?
            if let e = try args.option("--expires-at") {
                guard let v = Int64(e), v > 0 else { throw UsageError("--expires-at must be unix seconds, got '\(e)'") }
                expires = v
            }
            return Entry(kind: kind, expiresAt: expires)
        }

        /// `{"kind"?, "expires_at"?}` plus `token` when given.
        func json(token: String? = nil) -> JSON {
            .object([("token", token.map(JSON.string)), ("kind", kind.map(JSON.string)), ("expires_at", expiresAt.map(JSON.int))])
        }
    }

    static func batchPath(_ channel: String) -> String {
        "/v1/channels/" + AdminClient.segment(channel) + "/subscriptions:batch"
    }

    static func tokenPath(_ channel: String, _ token: String) -> String {
        "/v1/channels/" + AdminClient.segment(channel) + "/subscriptions/" + AdminClient.segment(token)
    }

    /// `CHANNEL TOKEN...`, the positionals of `add` and `remove`.
    static func channelAndTokens(_ args: inout Arguments) throws -> (channel: String, tokens: [String]) {
        let channel = try args.positional("CHANNEL")
        let tokens = args.remainingPositionals()
        try args.finish()
        guard !tokens.isEmpty else { throw UsageError("missing TOKEN: one or more hex push tokens") }
        return (channel, tokens)
    }

    static func add(_ args: inout Arguments, _ opts: AdminOptions, _ console: Console) throws -> Int32 {
        let entry = try Entry.read(&args)
        let (channel, tokens) = try channelAndTokens(&args)
        let client = try opts.client()
        if tokens.count == 1 {
            let reply = try client.exchange("PUT", tokenPath(channel, tokens[0]), body: entry.json())
            guard reply.isSuccess else { throw client.failure(reply) }
            if opts.json {
                console.print(TextOutput.prettyJSON(reply.json ?? .null))
            } else {
                let what = reply.status == 201 ? "new" : "already subscribed, updated"
                console.print("subscribed \(tokens[0]) to \(channel) (\(what))")
            }
            return ExitCode.ok
        }
        let body: JSON = ["subscribe": .array(tokens.map { entry.json(token: $0) })]
        let reply = try client.call("POST", batchPath(channel), body: body)
        if opts.json {
            console.print(TextOutput.prettyJSON(reply))
        } else {
            console.print(
                "subscribed \(TextOutput.count(tokens.count)) tokens to \(channel): \(TextOutput.count(reply["subscribed"])) new, "
                    + "\(TextOutput.count(reply["updated"])) already subscribed")
        }
        return ExitCode.ok
    }

    static func remove(_ args: inout Arguments, _ opts: AdminOptions, _ console: Console) throws -> Int32 {
        let (channel, tokens) = try channelAndTokens(&args)
        let client = try opts.client()
        if tokens.count == 1 {
            try client.call("DELETE", tokenPath(channel, tokens[0]))
            if opts.json {
                console.print(TextOutput.prettyJSON(["unsubscribed": 1]))
            } else {
                console.print("unsubscribed \(tokens[0]) from \(channel)")
            }
            return ExitCode.ok
        }
        let reply = try client.call("POST", batchPath(channel), body: ["unsubscribe": .array(tokens.map(JSON.string))])
        if opts.json {
            console.print(TextOutput.prettyJSON(reply))
        } else {
            let removed = reply["unsubscribed"]?.intValue ?? 0
            console.print(
                "unsubscribed \(TextOutput.count(removed)) of \(TextOutput.count(tokens.count)) tokens from \(channel)"
                    + (removed < tokens.count ? " (the others were not subscribed)" : ""))
        }
        return ExitCode.ok
    }
}
