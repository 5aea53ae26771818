import HeraldAPNS
import HeraldCore
import HeraldHTTPServer
import HeraldStore

extension APIServer {
    func createChannel(_ req: HTTPRequest) throws -> HTTPResponse {
        let o = try object(try jsonBody(req)!)
        try refuseUnknown(
            o,
            allowed: [
                "id", "bundle_id", "mode", "environment", "storage_policy", "catch_up", "min_interval_ms", "priority10_budget_per_hour",
                "expires_at",
            ])
        let id = try string(o, "id", required: true)!
        guard Identifier.isValidChannelID(id) else {
            throw APIError.invalid("id", "must be 1-128 characters of A-Z a-z 0-9 . _ - :")
        }
        let bundle = try string(o, "bundle_id", required: true)!
        guard Identifier.isValidBundleID(bundle) else {
            throw APIError.invalid("bundle_id", "must be a bundle ID like com.example.app (no .push-type. suffix: Herald adds it)")
        }
        let modeText = try string(o, "mode", required: false) ?? "fanout"
        guard let mode = ChannelMode(rawValue: modeText) else { throw APIError.invalid("mode", "must be fanout, broadcast or hybrid") }
        let envText = try string(o, "environment", required: false) ?? "production"
        guard let env = APNSEnvironment(rawValue: envText) else { throw APIError.invalid("environment", "must be sandbox or production") }
        let storageText = try string(o, "storage_policy", required: false) ?? "none"
        guard let storage = StoragePolicy(rawValue: storageText) else {
            throw APIError.invalid("storage_policy", "must be none or most-recent")
        }
        let change = try Self.channelChange(o, now: store.clock.nowSeconds())
        var settings = ChannelSettings()
        if let v = change.catchUp { settings.catchUp = v }
        if let v = change.minIntervalMillis { settings.minIntervalMillis = v }
        if let v = change.priority10BudgetPerHour { settings.priority10BudgetPerHour = v }
        try requireTeam(for: bundle)
        if try store.channel(id: id) != nil { throw StoreError.channelExists(id) }
        var apnsID: String?
        if mode.usesBroadcast {
            guard let manager = channelManagers(env) else {
                throw APIError(503, "unavailable", "broadcast channels need APNs channel management, which is not configured")
            }
            do {
                apnsID = try manager.create(bundleID: bundle, storagePolicy: storage.apnsValue)
            } catch {
                logger.error("api.apns_channel_create_failed", ["channel": .string(id), "error": .string(error.description)])
                switch error {
                case .rejected(let status, let reason):
                    throw APIError(
                        status >= 500 ? 503 : 422, status >= 500 ? "unavailable" : "apns_rejected",
                        "APNs refused to create the broadcast channel: \(reason)")
                case .unavailable(let m):
                    throw APIError(503, "unavailable", "APNs channel management is unavailable: \(m)", headers: [("retry-after", "5")])
                }
            }
        }
        var ch: Channel
        do {
            ch = try store.createChannel(
                id: id, bundleID: bundle, mode: mode, environment: env, storagePolicy: storage, apnsChannelID: apnsID,
                settings: settings)
        } catch {
            if let apnsID { try? channelManagers(env)?.delete(bundleID: bundle, channelID: apnsID) }
            throw error
        }
        if case .some(.some) = change.expiresAt {
            ch = try store.updateChannel(id: id, ChannelChange(expiresAt: change.expiresAt))
            dutyBell.ring()
        }
        engine.prepare(env, bundleID: bundle)
        logger.info(
            "api.channel_created",
            [
                "channel": .string(id), "mode": .string(mode.rawValue), "environment": .string(env.rawValue),
                "apns_channel_id": apnsID.map { .string($0) } ?? .null,
            ])
        return .json(201, Render.channel(ch, counts: (0, 0), lastEvent: nil), headers: [("location", "/v1/channels/\(id)")])
    }

    func listChannels() throws -> HTTPResponse {
        let all = try store.channels()
        let rendered = try all.map { c in
            Render.channel(c, counts: try store.subscriberCounts(channelNum: c.num), lastEvent: try store.lastEvent(channelNum: c.num))
        }
        return .json(200, ["channels": .array(rendered)])
    }

    func showChannel(_ id: String) throws -> HTTPResponse {
        guard let c = try store.channel(id: id) else { throw StoreError.channelNotFound(id) }
        return .json(
            200, Render.channel(c, counts: try store.subscriberCounts(channelNum: c.num), lastEvent: try store.lastEvent(channelNum: c.num))
        )
    }

    func closeChannelRoute(_ id: String) throws -> HTTPResponse {
        let ch = try closeChannel(id: id, why: .deleted)
        return .json(200, Render.channel(ch, counts: (0, 0), lastEvent: try store.lastEvent(channelNum: ch.num)))
    }

    /// Why a channel closed (the `channel.closed` webhook's `why`).
    public enum CloseReason: String, Sendable {
        /// `DELETE /v1/channels/{id}`.
        case deleted
        /// Its `expires_at` came (the duty runner).
        case expired
    }

    /// Closes a channel: the one path for `DELETE` and expiry. No more publishes,
    /// subscriptions dropped, unfinished events failed `channel_closed`, scheduled ones
    /// failed `channel_closed`, the fan-out told, the APNs channel deleted. Returns the
    /// channel as closed. Throws `StoreError` (`channelNotFound`). Any thread that may block.
    @discardableResult
    public func closeChannel(id: String, why: CloseReason) throws -> Channel {
        // With webhooks, `channel.closed` (and `event.finished` of the events it stopped) is
        // recorded in the close's own transaction: a crash right after loses none.
        let (ch, stopped) =
            webhooks != nil ? try store.closeChannelReporting(id: id, why: why.rawValue) : try store.closeChannel(id: id)
        let unscheduled = try store.failScheduled(channelNum: ch.num, reason: "channel_closed")
        engine.notifyClosed(channelID: id)
        webhooks?.reportsRecorded()
        if let apnsID = ch.apnsChannelID, let manager = channelManagers(ch.environment) {
            do {
                try manager.delete(bundleID: ch.bundleID, channelID: apnsID)
            } catch {
                logger.warning("api.apns_channel_delete_failed", ["channel": .string(id), "error": .string(error.description)])
            }
        }
        logger.info(
            "api.channel_closed",
            [
                "channel": .string(id), "why": .string(why.rawValue), "events_stopped": .int(Int64(stopped.count)),
                "scheduled_failed": .int(Int64(unscheduled)),
            ])
        return ch
    }
}
