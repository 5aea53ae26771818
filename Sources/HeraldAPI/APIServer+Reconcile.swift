import HeraldAPNS
import HeraldCore
import HeraldHTTPServer
import HeraldSender
import HeraldStore

/// `POST /v1/channels:reconcile` (`herald channels reconcile`): APNs' channels against
/// Herald's for every app and environment Herald has channels for (reference §5, §8.17).
extension APIServer {
    func reconcile(_ req: HTTPRequest) throws -> HTTPResponse {
        var apply = false
        if let body = try jsonBody(req, required: false) {
            let o = try object(body)
            try refuseUnknown(o, allowed: ["apply"])
            if let v = o["apply"], v != .null {
                guard let b = v.boolValue else { throw APIError.invalid("apply", "must be true or false") }
                apply = b
            }
        }
        let channels = try store.channels()
        let marked = Set(try store.apnsChannelLosses().map(\.channelNum))
        var groups: [JSON] = []
        var totals = (orphans: 0, lost: 0, deleted: 0, failed: 0)
        for t in ChannelReconciliation.targets(channels) {
            var g: [String: JSON] = ["bundle_id": .string(t.bundleID), "environment": .string(t.environment.rawValue)]
            if let teams = config.apnsTeams, case .uncovered = teams.team(for: t.bundleID) {
                g["error"] = .string(teams.uncoveredMessage(t.bundleID))
                groups.append(.object(g))
                totals.failed += 1
                continue
            }
            guard let manager = channelManagers(t.environment) else {
                throw APIError(503, "unavailable", "reconciliation needs APNs channel management, which is not configured")
            }
            let ids: [String]
            let listedAt = store.clock.nowMillis()
            do {
                ids = try manager.list(bundleID: t.bundleID)
            } catch {
                logger.warning(
                    "api.apns_channel_list_failed",
                    ["bundle_id": .string(t.bundleID), "environment": .string(t.environment.rawValue), "error": .string(error.description)])
                g["error"] = .string(error.description)
                groups.append(.object(g))
                totals.failed += 1
                continue
            }
            // Herald's channels read after APNs' list (see `compare`).
            let r = ChannelReconciliation.compare(
                bundleID: t.bundleID, environment: t.environment, channels: try store.channels(), apnsIDs: ids, markedLost: marked,
                listedAtMillis: listedAt)
            let now = store.clock.nowMillis()
            for l in r.lost where l.isNew {
                try store.markAPNSChannelLost(channelNum: l.channelNum, apnsChannelID: l.apnsChannelID, atMillis: now)
                logger.warning(
                    "api.apns_channel_lost",
                    ["channel": .string(l.channel), "apns_channel_id": .string(l.apnsChannelID), "bundle_id": .string(t.bundleID)])
            }
            var orphans: [JSON] = []
            var deleted = 0
            for o in r.orphans {
                var item: [String: JSON] = [
                    "apns_channel_id": .string(o.apnsChannelID), "herald_channel": o.closedChannel.map(JSON.string) ?? .null,
                    "why": .string(o.closedChannel == nil ? "unknown" : "closed"),
                ]
                if apply {
                    do {
                        try manager.delete(bundleID: t.bundleID, channelID: o.apnsChannelID)
                        item["deleted"] = true
                        deleted += 1
                    } catch {
                        item["deleted"] = false
                        item["error"] = .string(error.description)
                        totals.failed += 1
                    }
                }
                orphans.append(.object(item))
            }
            let remaining = r.apnsChannels - deleted
            apnsChannelGauge(t.bundleID, t.environment).set(Double(remaining))
            if remaining >= ChannelReconciliation.warningThreshold {
                logger.warning(
                    "apns.channels_near_limit",
                    [
                        "bundle_id": .string(t.bundleID), "environment": .string(t.environment.rawValue),
                        "channels": .int(Int64(remaining)),
                        "limit": .int(Int64(ChannelReconciliation.channelLimit)),
                    ])
            }
            g["apns_channels"] = .int(Int64(remaining))
            g["limit"] = .int(Int64(ChannelReconciliation.channelLimit))
            g["orphans"] = .array(orphans)
            g["lost"] = .array(
                r.lost.map {
                    ["channel": .string($0.channel), "apns_channel_id": .string($0.apnsChannelID), "new": .bool($0.isNew)]
                })
            groups.append(.object(g))
            totals.orphans += r.orphans.count
            totals.lost += r.lost.count
            totals.deleted += deleted
        }
        logger.info(
            "api.channels_reconciled",
            [
                "apply": .bool(apply), "apps": .int(Int64(groups.count)), "orphans": .int(Int64(totals.orphans)),
                "lost": .int(Int64(totals.lost)), "deleted": .int(Int64(totals.deleted)), "failed": .int(Int64(totals.failed)),
            ])
        return .json(
            200,
            [
                "apply": .bool(apply), "apps": .array(groups), "orphans": .int(Int64(totals.orphans)), "lost": .int(Int64(totals.lost)),
                "deleted": .int(Int64(totals.deleted)), "failed": .int(Int64(totals.failed)),
            ])
    }

    /// `herald_apns_channels{bundle_id,environment}`: channels APNs has for the app, as of
    /// the last reconciliation (label values: the apps of Herald's channels).
    func apnsChannelGauge(_ bundleID: String, _ env: APNSEnvironment) -> Gauge {
        metrics.gauge(
            "herald_apns_channels", help: "Channels APNs has for the app and environment, at the last reconciliation (limit 10000).",
            labels: ["bundle_id": bundleID, "environment": env.rawValue])
    }

    /// Publishing to a channel whose APNs channel is gone is refused: 409 `channel_lost`.
    func refuseLost(_ channelID: String) throws {
        guard let loss = try store.apnsChannelLoss(channelID: channelID) else { return }
        throw APIError(
            409, "channel_lost",
            "channel '\(channelID)' lost its APNs channel \(loss.apnsChannelID) (not in APNs' all-channels since \(loss.lostAtMillis / 1000), found by herald channels reconcile): close it and create it again"
        )
    }
}
