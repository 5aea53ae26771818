import Foundation
import HeraldCore

/// `herald events list|show|cancel`: a channel's events, one event, cancelling a scheduled one.
enum EventsCommand: HeraldCommand {
    static let name = "events"
    static let summary = "list a channel's events, show one, cancel a scheduled one"
    static let states = ["queued", "sending", "done", "superseded", "failed", "scheduled", "cancelled"]

    static func run(_ args: inout Arguments, console: Console) throws -> Int32 {
        let opts = try AdminOptions.read(&args)
        let sub = try args.positional("sub-command: list, show or cancel")
        switch sub {
        case "list": return try list(&args, opts, console)
        case "show": return try show(&args, opts, console)
        case "cancel": return try cancel(&args, opts, console)
        default: throw UsageError("unknown sub-command '\(sub)': use list, show or cancel")
        }
    }

    static func list(_ args: inout Arguments, _ opts: AdminOptions, _ console: Console) throws -> Int32 {
        let channel = try args.positional("channel ID")
        let state = try args.choice("--state", states)
        let limit = try args.option("--limit")
        let before = try args.option("--before")
        try args.finish()
        if let limit, Int(limit).map({ (1...1000).contains($0) }) != true { throw UsageError("--limit must be 1-1000") }
        if let before, Int64(before).map({ $0 >= 1 }) != true { throw UsageError("--before must be a seq (an integer ≥ 1)") }
        var query: [String] = []
        if let state { query.append("state=" + state) }
        if let limit { query.append("limit=" + limit) }
        if let before { query.append("before=" + before) }
        let reply = try opts.client().call(
            "GET", "/v1/channels/\(AdminClient.segment(channel))/events", query: query.isEmpty ? nil : query.joined(separator: "&"))
        if let next = reply["next_before"]?.intValue {
            console.error("more: herald events list \(channel) --before \(next)")
        }
        if opts.json {
            console.print(TextOutput.prettyJSON(reply))
            return ExitCode.ok
        }
        let events = reply["events"]?.arrayValue ?? []
        if events.isEmpty {
            console.print(state.map { "no \($0) events on \(channel)" } ?? "no events on \(channel) yet")
        } else {
            let rows = events.map { e in
                [
                    TextOutput.text(e["seq"]), TextOutput.text(e["event_id"]), TextOutput.text(e["event"]), TextOutput.text(e["state"]),
                    TextOutput.time(e["send_at"]), TextOutput.text(e["targets"]), TextOutput.text(e["sent"]),
                    TextOutput.text(e["failed"]), TextOutput.time(e["created_at"]),
                ]
            }
            console.print(TextOutput.table(["SEQ", "EVENT ID", "EVENT", "STATE", "SEND AT", "TARGETS", "SENT", "FAILED", "CREATED"], rows))
        }
        return ExitCode.ok
    }

    static func show(_ args: inout Arguments, _ opts: AdminOptions, _ console: Console) throws -> Int32 {
        let channel = try args.positional("channel ID")
        let id = try args.positional("event ID")
        try args.finish()
        let e = try opts.client().call("GET", "/v1/channels/\(AdminClient.segment(channel))/events/\(AdminClient.segment(id))")
        console.print(opts.json ? TextOutput.prettyJSON(e) : TextOutput.fields(fieldPairs(e)))
        return ExitCode.ok
    }

    static func cancel(_ args: inout Arguments, _ opts: AdminOptions, _ console: Console) throws -> Int32 {
        let channel = try args.positional("channel ID")
        let id = try args.positional("event ID")
        try args.finish()
        let e = try opts.client().call("DELETE", "/v1/channels/\(AdminClient.segment(channel))/events/\(AdminClient.segment(id))")
        if opts.json {
            console.print(TextOutput.prettyJSON(e))
        } else {
            console.print("cancelled event \(id) on \(channel)")
            console.print(TextOutput.fields(fieldPairs(e)))
        }
        return ExitCode.ok
    }

    static func fieldPairs(_ e: JSON) -> [(String, String)] {
        [
            ("event_id", TextOutput.text(e["event_id"])), ("channel", TextOutput.text(e["channel"])), ("seq", TextOutput.text(e["seq"])),
            ("event", TextOutput.text(e["event"])), ("state", TextOutput.text(e["state"])), ("send_at", TextOutput.time(e["send_at"])),
            ("priority", TextOutput.text(e["priority"])), ("aps_timestamp", TextOutput.text(e["aps_timestamp"])),
            ("targets", TextOutput.text(e["targets"])), ("sent", TextOutput.text(e["sent"])), ("failed", TextOutput.text(e["failed"])),
            ("pruned", TextOutput.text(e["pruned"])), ("failure_reason", TextOutput.text(e["failure_reason"])),
            ("superseded_by", TextOutput.text(e["superseded_by"])), ("broadcast", TextOutput.text(e["broadcast"])),
            ("created_at", TextOutput.time(e["created_at"])), ("started_at", TextOutput.time(e["started_at"])),
            ("finished_at", TextOutput.time(e["finished_at"])),
        ]
    }
}
