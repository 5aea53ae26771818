import HeraldCore

/// Human views of the API's Channel and Event objects.
enum ChannelFormat {
    static func table(_ channels: [JSON]) -> String {
        let rows = channels.map { c in
            [
                TextOutput.text(c["id"]), TextOutput.text(c["mode"]), TextOutput.text(c["environment"]),
                TextOutput.text(c["storage_policy"]), TextOutput.text(c["state"]),
                TextOutput.count(c["subscribers"]?["total"]), lastEvent(c["last_event"]), TextOutput.time(c["created_at"]),
            ]
        }
        return TextOutput.table(["ID", "MODE", "ENV", "STORAGE", "STATE", "SUBSCRIBERS", "LAST EVENT", "CREATED"], rows)
    }

    static func fields(_ c: JSON) -> String {
        let subs = c["subscribers"]
        return TextOutput.fields([
            ("id", TextOutput.text(c["id"])),
            ("bundle_id", TextOutput.text(c["bundle_id"])),
            ("mode", TextOutput.text(c["mode"])),
            ("environment", TextOutput.text(c["environment"])),
            ("storage_policy", TextOutput.text(c["storage_policy"])),
            ("apns_channel_id", TextOutput.text(c["apns_channel_id"])),
            ("state", TextOutput.text(c["state"])),
            ("created_at", TextOutput.time(c["created_at"])),
            ("closed_at", TextOutput.time(c["closed_at"])),
            ("expires_at", TextOutput.time(c["expires_at"])),
            (
                "subscribers",
                "\(TextOutput.count(subs?["total"])) (activity \(TextOutput.count(subs?["activity"])), "
                    + "push-to-start \(TextOutput.count(subs?["push_to_start"])))"
            ),
            ("last_event", lastEventDetail(c["last_event"])),
        ])
    }

    /// `#7 update done`, or "-".
    static func lastEvent(_ e: JSON?) -> String {
        guard let e, e != .null else { return "-" }
        return "#\(TextOutput.text(e["seq"])) \(TextOutput.text(e["event"])) \(TextOutput.text(e["state"]))"
    }

    /// `#7 update done (evt_…, sent 120/120)`, or "-".
    static func lastEventDetail(_ e: JSON?) -> String {
        guard let e, e != .null else { return "-" }
        return lastEvent(e)
            + " (\(TextOutput.text(e["event_id"])), sent \(TextOutput.count(e["sent"]))/\(TextOutput.count(e["targets"])))"
    }
}
