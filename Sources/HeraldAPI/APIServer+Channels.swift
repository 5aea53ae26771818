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
        var settings = ChannelSettings()
        if let v = o["catch_up"], v != .null {
            guard let b = v.boolValue else { throw APIError.invalid("catch_up", "must be true or false") }
            settings.catchUp = b
        }
        if let v = o["min_interval_ms"], v != .null {
            guard let n = v.intValue, (0...86_400_000).contains(n) else { throw APIError.invalid("min_interval_ms", "must be 0-86400000") }
            settings.minIntervalMillis = n
        }
        if let v = o["priority10_budget_per_hour"], v != .null {
            guard let n = v.intValue, (0...100_000).contains(n) else {
                throw APIError.invalid("priority10_budget_per_hour", "must be 0-100000 (0: no budget)")
            }
            settings.priority10BudgetPerHour = n
        }
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
        let ch: Channel
        do {
            ch = try store.createChannel(
                id: id, bundleID: bundle, mode: mode, environment: env, storagePolicy: storage, apnsChannelID: apnsID,
                settings: settings)
        } catch {
            if let apnsID { try? channelManagers(env)?.delete(bundleID: bundle, channelID: apnsID) }
            throw error
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

    func closeChannel(_ id: String) throws -> HTTPResponse {
        let (ch, stopped) = try store.closeChannel(id: id)
        engine.notifyClosed(channelID: id)
        if let apnsID = ch.apnsChannelID, let manager = channelManagers(ch.environment) {
            do {
                try manager.delete(bundleID: ch.bundleID, channelID: apnsID)
            } catch {
                logger.warning("api.apns_channel_delete_failed", ["channel": .string(id), "error": .string(error.description)])
            }
        }
        logger.info("api.channel_closed", ["channel": .string(id), "events_stopped": .int(Int64(stopped.count))])
        return .json(200, Render.channel(ch, counts: (0, 0), lastEvent: try store.lastEvent(channelNum: ch.num)))
    }
}
