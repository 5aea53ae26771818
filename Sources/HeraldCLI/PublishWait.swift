import Foundation
import HeraldCore

/// `publish --wait`: polls the event every 200 ms with a live progress line until its state
/// is final, then prints a summary. Exit 0 for done or superseded, 1 for failed or cancelled.
enum PublishWait {
    static let finalStates: Set<String> = ["done", "superseded", "failed", "cancelled"]
    static let pollInterval = 0.2

    static func run(
        _ client: AdminClient, channel: String, eventID: String, console: Console, started: Double
    ) throws -> Int32 {
        let path = "/v1/channels/" + AdminClient.segment(channel) + "/events/" + AdminClient.segment(eventID)
        let line = LiveLine(console: console)
        defer { line.finish() }
        var meter = RateMeter()
        var event: JSON
        while true {
            event = try client.call("GET", path)
            if let state = event["state"]?.stringValue, finalStates.contains(state) { break }
            let now = Monotonic.seconds()
            meter.record(processed(event), at: now)
            line.update(progressLine(event, rate: meter.perSecond), now: now)
            Thread.sleep(forTimeInterval: pollInterval)
        }
        line.finish()
        let state = event["state"]?.stringValue ?? ""
        console.print(summary(event, seconds: Monotonic.seconds() - started))
        return state == "failed" || state == "cancelled" ? ExitCode.failure : ExitCode.ok
    }

    /// Targets dealt with so far: sent, failed, pruned and skipped are each final for a
    /// target (retried counts attempts, not targets).
    static func processed(_ e: JSON) -> Int64 {
        let n = ["sent", "failed", "pruned", "skipped"].reduce(Int64(0)) { $0 + (e[$1]?.intValue ?? 0) }
        guard let targets = e["targets"]?.intValue else { return n }
        return min(n, targets)
    }

    /// `sending  42,000/100,000 (42%)  38,500/s  ETA 2s`.
    static func progressLine(_ e: JSON, rate: Double?) -> String {
        let state = e["state"]?.stringValue ?? "?"
        let done = processed(e)
        let targets = e["targets"]?.intValue ?? 0
        var s = state.padding(toLength: max(state.count, 7), withPad: " ", startingAt: 0)
        s += "  \(TextOutput.count(done))/\(TextOutput.count(targets))"
        if targets > 0 { s += " (\(done * 100 / targets)%)" }
        if let rate, rate > 0 {
            s += "  \(TextOutput.count(Int64(rate.rounded())))/s"
            if targets > done { s += "  ETA " + eta(Double(targets - done) / rate) }
        }
        return s
    }

    /// `2s`, `1m05s`, `2h03m`.
    static func eta(_ seconds: Double) -> String {
        let s = Int(seconds.rounded(.up))
        if s < 60 { return "\(s)s" }
        if s < 3600 { return String(format: "%dm%02ds", s / 60, s % 60) }
        return String(format: "%dh%02dm", s / 3600, (s % 3600) / 60)
    }

    static func summary(_ e: JSON, seconds: Double) -> String {
        let state = e["state"]?.stringValue ?? "?"
        var lines = ["event \(TextOutput.text(e["event_id"])) \(state)"]
        lines.append(
            TextOutput.fields([
                ("sent", "\(TextOutput.count(e["sent"])) of \(TextOutput.count(e["targets"]))"),
                ("failed", TextOutput.count(e["failed"])),
                ("pruned", TextOutput.count(e["pruned"])),
                ("retried", TextOutput.count(e["retried"])),
                ("skipped", TextOutput.count(e["skipped"])),
                ("duration", TextOutput.duration(seconds)),
            ]))
        if let b = e["broadcast"]?.stringValue, b != "none" { lines.append("broadcast: \(b)") }
        if state == "failed" { lines.append("failure_reason: \(TextOutput.text(e["failure_reason"]))") }
        if state == "superseded" { lines.append("superseded_by: \(TextOutput.text(e["superseded_by"]))") }
        return lines.joined(separator: "\n")
    }
}
