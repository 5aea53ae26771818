import Foundation
import HeraldCore

/// `herald channels reconcile [--apply]`: APNs' channels against Herald's
/// (POST /v1/channels:reconcile).
extension ChannelsCommand {
    static func reconcile(_ args: inout Arguments, _ opts: AdminOptions, _ console: Console) throws -> Int32 {
        let apply = args.flag("--apply")
        try args.finish()
        let report = try opts.client().call("POST", "/v1/channels:reconcile", body: ["apply": .bool(apply)])
        if opts.json {
            console.print(TextOutput.prettyJSON(report))
        } else {
            console.print(reconcileText(report))
        }
        // An app that could not be listed, or an orphan that could not be deleted: the
        // report is incomplete, so the run failed (exit 1), after printing what it found.
        return (report["failed"]?.intValue ?? 0) > 0 ? ExitCode.failure : ExitCode.ok
    }

    /// The report for people: one table row per app and environment, then each orphan and
    /// lost channel.
    static func reconcileText(_ report: JSON) -> String {
        let apply = report["apply"]?.boolValue ?? false
        let apps = report["apps"]?.arrayValue ?? []
        if apps.isEmpty { return "no channels yet: nothing to reconcile" }
        var rows: [[String]] = []
        var details: [String] = []
        for a in apps {
            let app = TextOutput.text(a["bundle_id"])
            let env = TextOutput.text(a["environment"])
            if let e = a["error"]?.stringValue {
                rows.append([app, env, "-", "-", "-", "error: \(e)"])
                continue
            }
            let orphans = a["orphans"]?.arrayValue ?? []
            let lost = a["lost"]?.arrayValue ?? []
            let count = a["apns_channels"]?.intValue ?? 0
            let limit = a["limit"]?.intValue ?? 10_000
            let note = count >= limit * 9 / 10 ? "near APNs' limit of \(TextOutput.count(limit))" : ""
            rows.append([app, env, TextOutput.count(count), TextOutput.count(orphans.count), TextOutput.count(lost.count), note])
            for o in orphans {
                let id = TextOutput.text(o["apns_channel_id"])
                let why = o["herald_channel"]?.stringValue.map { "held by closed channel \($0)" } ?? "unknown to Herald"
                let outcome: String
                switch o["deleted"]?.boolValue {
                case true?: outcome = " — deleted"
                case false?: outcome = " — not deleted: \(TextOutput.text(o["error"]))"
                case nil: outcome = ""
                }
                details.append("orphan  \(app) \(env) \(id) (\(why))\(outcome)")
            }
            for l in lost {
                details.append(
                    "lost    \(TextOutput.text(l["channel"])): APNs channel \(TextOutput.text(l["apns_channel_id"])) is gone"
                        + (l["new"]?.boolValue == true ? " (marked now)" : ""))
            }
        }
        var out = TextOutput.table(["APP", "ENV", "APNS", "ORPHANS", "LOST", "NOTE"], rows)
        if !details.isEmpty { out += "\n\n" + details.joined(separator: "\n") }
        let orphans = report["orphans"]?.intValue ?? 0
        if apply {
            out += "\n\ndeleted \(TextOutput.count(report["deleted"])) of \(TextOutput.count(orphans)) orphans at APNs"
        } else if orphans > 0 {
            out += "\n\nrun with --apply to delete the \(TextOutput.count(orphans)) orphans at APNs"
        }
        if (report["lost"]?.intValue ?? 0) > 0 {
            out += "\nlost channels refuse publishes (409 channel_lost): close them and create them again"
        }
        return out
    }

    static var reconcileHelp: String {
        """
        Usage: herald channels reconcile [--apply] [--json]

        For every app and environment Herald has channels for, compares APNs' channels
        (all-channels) with Herald's (POST /v1/channels:reconcile):
          orphans   on APNs, but held by no open Herald channel (unknown to Herald, or its
                    channel is closed); each counts against APNs' 10,000 per app and environment
          lost      open Herald channels whose APNs channel is gone; they are marked, and
                    publishing to them is refused (409 channel_lost) until closed and recreated
        Exits 1 when an app could not be listed or an orphan not deleted.

        Options:
          --apply             delete the orphans at APNs

        \(AdminOptions.helpText)

        Examples:
          herald channels reconcile
          herald channels reconcile --apply --json
        """
    }
}
