import Foundation
import HeraldCore

/// `herald keys create|list|revoke`.
enum KeysCommand: HeraldCommand {
    static let name = "keys"
    static let summary = "create, list and revoke API keys (admin)"
    static let roles = ["publisher", "subscriber", "admin"]

    static func run(_ args: inout Arguments, console: Console) throws -> Int32 {
        let opts = try AdminOptions.read(&args)
        let sub = try args.positional("sub-command: create, list or revoke")
        switch sub {
        case "create": return try create(&args, opts, console)
        case "list": return try list(&args, opts, console)
        case "revoke": return try revoke(&args, opts, console)
        default: throw UsageError("unknown sub-command '\(sub)': use create, list or revoke")
        }
    }

    static func create(_ args: inout Arguments, _ opts: AdminOptions, _ console: Console) throws -> Int32 {
        let role = try args.choice("--role", roles)
        let patterns = try args.options("--channels")
        let label = try args.option("--label")
        try args.finish()
        guard let role else { throw UsageError("--role is required: publisher, subscriber or admin") }
        guard !patterns.isEmpty else {
            throw UsageError("--channels is required: channel ids or prefixes ending in * (--channels 'match-*' flight-AF1)")
        }
        let body = JSON.object([
            ("role", .string(role)), ("channels", .array(patterns.map(JSON.string))), ("label", label.map(JSON.string)),
        ])
        let key = try opts.client().call("POST", "/v1/keys", body: body)
        if opts.json {
            console.print(TextOutput.prettyJSON(key))
        } else {
            console.print("created \(TextOutput.text(key["role"])) key \(TextOutput.text(key["id"]))")
            console.print(TextOutput.fields([("secret", TextOutput.text(key["secret"]))] + fieldPairs(key)))
        }
        console.error("Save the secret now: the server keeps only its hash and will not show it again.")
        return ExitCode.ok
    }

    static func list(_ args: inout Arguments, _ opts: AdminOptions, _ console: Console) throws -> Int32 {
        try args.finish()
        let reply = try opts.client().call("GET", "/v1/keys")
        if opts.json {
            console.print(TextOutput.prettyJSON(reply))
        } else if let keys = reply["keys"]?.arrayValue, !keys.isEmpty {
            let rows = keys.map { k in
                [
                    TextOutput.text(k["id"]), TextOutput.text(k["role"]), patterns(k), TextOutput.text(k["label"]),
                    TextOutput.time(k["created_at"]), TextOutput.time(k["last_used_at"]), TextOutput.time(k["revoked_at"]),
                ]
            }
            console.print(TextOutput.table(["ID", "ROLE", "CHANNELS", "LABEL", "CREATED", "LAST USED", "REVOKED"], rows))
        } else {
            console.print("no keys yet: create one with `herald keys create --role publisher --channels 'match-*'`")
        }
        return ExitCode.ok
    }

    static func revoke(_ args: inout Arguments, _ opts: AdminOptions, _ console: Console) throws -> Int32 {
        let id = try args.positional("key ID")
        try args.finish()
        let key = try opts.client().call("DELETE", "/v1/keys/" + AdminClient.segment(id))
        if opts.json {
            console.print(TextOutput.prettyJSON(key))
        } else {
            console.print("revoked key \(id)")
            console.print(TextOutput.fields(fieldPairs(key)))
        }
        return ExitCode.ok
    }

    static func fieldPairs(_ k: JSON) -> [(String, String)] {
        [
            ("id", TextOutput.text(k["id"])), ("role", TextOutput.text(k["role"])), ("channels", patterns(k)),
            ("label", TextOutput.text(k["label"])), ("created_at", TextOutput.time(k["created_at"])),
            ("last_used_at", TextOutput.time(k["last_used_at"])), ("revoked_at", TextOutput.time(k["revoked_at"])),
        ]
    }

    static func patterns(_ k: JSON) -> String {
        let list = (k["channels"]?.arrayValue ?? []).map { TextOutput.text($0) }
        return list.isEmpty ? "-" : list.joined(separator: ",")
    }
}
