import Foundation
import HeraldCore

/// `herald publish CHANNEL (--file F | --json J)`: posts one event, optionally waits for it.
enum PublishCommand: HeraldCommand {
    static let name = "publish"
    static let summary = "publish an event to a channel; --wait shows its delivery to the end"

    static func run(_ args: inout Arguments, console: Console) throws -> Int32 {
        let opts = try AdminOptions.read(&args, jsonFlag: false)
        let file = try args.option("--file")
        let inline = try args.option("--json")
        let priority = try args.choice("--priority", ["5", "10"]).flatMap { Int64($0) }
        var expiration: Int64?
        if let e = try args.option("--expiration") {
            guard let v = Int64(e), v >= 0 else { throw UsageError("--expiration must be unix seconds (0: no storage), got '\(e)'") }
            expiration = v
        }
        var sendAt: Int64?
        if let t = try args.option("--send-at") {
            guard let v = Int64(t), v > 0 else { throw UsageError("--send-at must be unix seconds, got '\(t)'") }
            sendAt = v
        }
        let idempotencyKey = try args.option("--idempotency-key")
        let dryRun = args.flag("--dry-run")
        let wait = args.flag("--wait")
        let channel = try args.positional("CHANNEL")
        try args.finish()
        if dryRun && wait { throw UsageError("--wait cannot follow a --dry-run: nothing is sent") }
        let text: String
        switch (file, inline) {
        case (let f?, nil): text = try readPayload(f)
        case (nil, let j?): text = j
        case (nil, nil): throw UsageError("give the event with --file F or --json J")
        case (_?, _?): throw UsageError("give either --file or --json, not both")
        }
        let body = try makeBody(text, priority: priority, expiration: expiration, sendAt: sendAt)
        let client = try opts.client()
        let started = Monotonic.seconds()
        let path = "/v1/channels/" + AdminClient.segment(channel) + "/events"
        var headers: [String: String] = [:]
        if let idempotencyKey { headers["Idempotency-Key"] = idempotencyKey }
        let reply = try client.exchange("POST", path, query: dryRun ? "dry_run=true" : nil, body: body, headers: headers)
        guard reply.isSuccess, let result = reply.json else { throw client.failure(reply) }
        if dryRun {
            console.print(dryRunReport(result, channel: channel))
            return ExitCode.ok
        }
        console.print(acceptedLine(result, status: reply.status, channel: channel))
        if wait {
            guard let eventID = result["event_id"]?.stringValue else {
                throw CommandFailure("the server's answer has no event_id to wait for: \(result.text)")
            }
            return try PublishWait.run(client, channel: channel, eventID: eventID, console: console, started: started)
        }
        return ExitCode.ok
    }

    /// The request body from the user's JSON: a full publish body (it has `aps`) or just
    /// the `aps` dictionary, which is wrapped. `priority`/`expiration`/`send_at` are added
    /// (the flags win over the JSON). Throws `UsageError` when the text is not a JSON object.
    static func makeBody(_ text: String, priority: Int64?, expiration: Int64?, sendAt: Int64? = nil) throws -> JSON {
        let parsed: JSON
        do {
            parsed = try JSON.parse(text)
        } catch {
            throw UsageError("the event is not valid JSON")
        }
        guard var object = parsed.objectValue else {
            throw UsageError("the event must be a JSON object: a publish body {\"aps\":{...}} or the aps dictionary itself")
        }
        if object["aps"] == nil { object = ["aps": .object(object)] }
        if let priority { object["priority"] = .int(priority) }
        if let expiration { object["expiration"] = .int(expiration) }
        if let sendAt { object["send_at"] = .int(sendAt) }
        return .object(object)
    }

    static func readPayload(_ path: String) throws -> String {
        if path == "-" {
            return String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CommandFailure("cannot read \(path)")
        }
        return String(decoding: data, as: UTF8.self)
    }

    static func acceptedLine(_ r: JSON, status: Int, channel: String) -> String {
        let id = TextOutput.text(r["event_id"])
        let detail = "seq \(TextOutput.text(r["seq"])), state \(TextOutput.text(r["state"]))"
        if status == 200 { return "event \(id) was already published with this idempotency key (\(detail))" }
        return "published event \(id) to \(channel) (\(detail))"
    }

    static func dryRunReport(_ r: JSON, channel: String) -> String {
        let bytes = r["payload_bytes"]?.intValue ?? 0
        let limit = r["limit_bytes"]?.intValue ?? 0
        let fits = limit == 0 || bytes <= limit
        var targets = "\(TextOutput.count(r["targets"])) tokens"
        if r["broadcast"]?.boolValue == true { targets += " + one APNs broadcast" }
        let lines = TextOutput.fields([
            ("event", TextOutput.text(r["event"])),
            ("payload", "\(TextOutput.count(bytes)) of \(TextOutput.count(limit)) bytes" + (fits ? "" : " (TOO LARGE)")),
            ("targets", targets),
            ("priority", TextOutput.text(r["priority"])),
            ("aps_timestamp", TextOutput.text(r["aps_timestamp"])),
        ])
        let payload = r["payload"].map { TextOutput.prettyJSON($0) } ?? "-"
        return "dry run on \(channel): nothing was sent\n" + lines + "\npayload as sent to APNs:\n" + payload
    }
}
