import Foundation
import HeraldCore

/// `herald webhooks create|list|delete`.
enum WebhooksCommand: HeraldCommand {
    static let name = "webhooks"
    static let summary = "create, list and delete webhooks (admin)"

    static func run(_ args: inout Arguments, console: Console) throws -> Int32 {
        let opts = try AdminOptions.read(&args)
        let sub = try args.positional("sub-command: create, list or delete")
        switch sub {
        case "create": return try create(&args, opts, console)
        case "list": return try list(&args, opts, console)
        case "delete": return try delete(&args, opts, console)
        default: throw UsageError("unknown sub-command '\(sub)': use create, list or delete")
        }
    }

    static func create(_ args: inout Arguments, _ opts: AdminOptions, _ console: Console) throws -> Int32 {
        let events = try args.options("--events")
        let patterns = try args.options("--channels")
        let url = try args.positional("webhook URL")
        try args.finish()
        guard !events.isEmpty else {
            throw UsageError("--events is required: event.finished, subscription.pruned, channel.closed, prune_guard.tripped")
        }
        var fields: [(String, JSON?)] = [("url", .string(url)), ("events", .array(events.map(JSON.string)))]
        if !patterns.isEmpty { fields.append(("channels", .array(patterns.map(JSON.string)))) }
        let w = try opts.client().call("POST", "/v1/webhooks", body: JSON.object(fields))
        if opts.json {
            console.print(TextOutput.prettyJSON(w))
        } else {
            console.print("created webhook \(TextOutput.text(w["id"]))")
            console.print(TextOutput.fields([("secret", TextOutput.text(w["secret"]))] + fieldPairs(w)))
        }
        console.error("Save the secret now: it signs every delivery (Herald-Signature) and is not shown again.")
        return ExitCode.ok
    }

    static func list(_ args: inout Arguments, _ opts: AdminOptions, _ console: Console) throws -> Int32 {
        try args.finish()
        let reply = try opts.client().call("GET", "/v1/webhooks")
        if opts.json {
            console.print(TextOutput.prettyJSON(reply))
        } else if let hooks = reply["webhooks"]?.arrayValue, !hooks.isEmpty {
            let rows = hooks.map { w in
                [
                    TextOutput.text(w["id"]), TextOutput.text(w["url"]), joined(w["events"]), joined(w["channels"]),
                    TextOutput.time(w["created_at"]),
                ]
            }
            console.print(TextOutput.table(["ID", "URL", "EVENTS", "CHANNELS", "CREATED"], rows))
        } else {
            console.print("no webhooks yet: create one with `herald webhooks create https://example.com/hook --events event.finished`")
        }
        return ExitCode.ok
    }

    static func delete(_ args: inout Arguments, _ opts: AdminOptions, _ console: Console) throws -> Int32 {
        let id = try args.positional("webhook ID")
        try args.finish()
        let w = try opts.client().call("DELETE", "/v1/webhooks/" + AdminClient.segment(id))
        if opts.json {
            console.print(TextOutput.prettyJSON(w))
        } else {
            console.print("deleted webhook \(id)")
            console.print(TextOutput.fields(fieldPairs(w)))
        }
        return ExitCode.ok
    }

    static func fieldPairs(_ w: JSON) -> [(String, String)] {
        [
            ("id", TextOutput.text(w["id"])), ("url", TextOutput.text(w["url"])), ("events", joined(w["events"])),
            ("channels", joined(w["channels"])), ("created_at", TextOutput.time(w["created_at"])),
        ]
    }

    static func joined(_ j: JSON?) -> String {
        let list = (j?.arrayValue ?? []).map { TextOutput.text($0) }
        return list.isEmpty ? "-" : list.joined(separator: ",")
    }
}
