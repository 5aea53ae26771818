import HeraldAPNS
import HeraldCore
import HeraldSQL

extension Store {
    static let channelColumns = ChannelColumn.selectList

    static func channel(from s: Statement) -> Channel {
        typealias C = ChannelColumn
        var ch = Channel(
            num: s.int64(C.num), id: s.text(C.id), bundleID: s.text(C.bundleID),
            mode: ChannelMode(rawValue: s.text(C.mode)) ?? .fanout,
            environment: APNSEnvironment(rawValue: s.text(C.environment)) ?? .production,
            storagePolicy: StoragePolicy(rawValue: s.text(C.storagePolicy)) ?? .none, apnsChannelID: s.optionalText(C.apnsChannelID),
            isOpen: ChannelStatus(rawValue: s.text(C.state)) == .open,
            lifecycle: ChannelLifecycle(rawValue: s.text(C.lifecycle)) ?? .idle, lastSeq: s.int64(C.lastSeq),
            lastTimestamp: s.int64(C.lastTimestamp), currentEvent: s.optionalText(C.currentEvent), catchUp: s.int64(C.catchUp) != 0,
            minIntervalMillis: s.int64(C.minInterval), priority10BudgetPerHour: s.int64(C.p10Budget),
            createdAtMillis: s.int64(C.createdAt), closedAtMillis: s.optionalInt64(C.closedAt))
        ch.expiresAt = s.optionalInt64(C.expiresAt)
        return ch
    }

    static func loadChannel(_ c: SQLiteConnection, id: String) throws -> Channel? {
        let s = try c.cached("SELECT \(channelColumns) FROM channels WHERE id = ?")
        try s.bind(1, text: id)
        return try s.step() ? channel(from: s) : nil
    }

    static func loadChannel(_ c: SQLiteConnection, num: Int64) throws -> Channel? {
        let s = try c.cached("SELECT \(channelColumns) FROM channels WHERE num = ?")
        try s.bind(1, int64: num)
        return try s.step() ? channel(from: s) : nil
    }

    /// Inserts a channel. Throws `channelExists` (also for a closed channel of that id:
    /// ids are not reused, so old events stay unambiguous).
    public func createChannel(
        id: String, bundleID: String, mode: ChannelMode, environment: APNSEnvironment, storagePolicy: StoragePolicy,
        apnsChannelID: String?, settings: ChannelSettings = ChannelSettings()
    ) throws -> Channel {
        let now = clock.nowMillis()
        return try write { c in
            if try Self.loadChannel(c, id: id) != nil { throw StoreError.channelExists(id) }
            try c.run(
                """
                INSERT INTO channels (id, bundle_id, mode, environment, storage_policy, apns_channel_id, created_at_ms,
                                      catch_up, min_interval_ms, p10_budget_per_hour)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
                [
                    .text(id), .text(bundleID), .text(mode.rawValue), .text(environment.rawValue), .text(storagePolicy.rawValue),
                    apnsChannelID.map { .text($0) } ?? .null, .integer(now), .integer(settings.catchUp ? 1 : 0),
                    .integer(settings.minIntervalMillis), .integer(settings.priority10BudgetPerHour),
                ])
            return try Self.loadChannel(c, id: id)!
        }
    }

    /// The channel `id`, open or closed.
    public func channel(id: String) throws -> Channel? {
        try read { try Self.loadChannel($0, id: id) }
    }

    public func channel(num: Int64) throws -> Channel? {
        try read { try Self.loadChannel($0, num: num) }
    }

    /// Every channel, by id.
    public func channels() throws -> [Channel] {
        try read { c in
            var out: [Channel] = []
            try c.forEachRow("SELECT \(Self.channelColumns) FROM channels ORDER BY id") { s in
                out.append(Self.channel(from: s))
                return true
            }
            return out
        }
    }

    /// Live subscriptions of a channel by kind (expired ones not counted).
    public func subscriberCounts(channelNum: Int64) throws -> (activity: Int64, pushToStart: Int64) {
        let now = clock.nowSeconds()
        return try read { c in
            var a: Int64 = 0
            var p: Int64 = 0
            try c.forEachRow(
                "SELECT kind, COUNT(*) FROM subscriptions WHERE channel = ? AND (expires_at IS NULL OR expires_at > ?) GROUP BY kind",
                [.integer(channelNum), .integer(now)]
            ) { s in
                if s.int64(0) == 0 { a = s.int64(1) } else { p = s.int64(1) }
                return true
            }
            return (a, p)
        }
    }

    /// Closes a channel: no more publishes, subscriptions dropped, unfinished events failed
    /// with reason `channel_closed`. Returns the closed channel and the ids of the events it
    /// stopped. Throws `channelNotFound`.
    public func closeChannel(id: String) throws -> (Channel, [String]) {
        let now = clock.nowMillis()
        return try write { c in
            let (ch, stopped, _) = try Self.close(c, id: id, now: now)
            return (ch, stopped)
        }
    }

    /// The close, inside a write: the channel, the events it stopped, and whether this call
    /// closed it (false: it was closed already).
    static func close(_ c: SQLiteConnection, id: String, now: Int64) throws -> (Channel, [String], closed: Bool) {
        guard let ch = try loadChannel(c, id: id) else { throw StoreError.channelNotFound(id) }
        guard ch.isOpen else { return (ch, [], false) }
        try c.run(
            "UPDATE channels SET state = ?, closed_at_ms = ? WHERE num = ?",
            [.text(ChannelStatus.closed.rawValue), .integer(now), .integer(ch.num)])
        try c.run("DELETE FROM subscriptions WHERE channel = ?", [.integer(ch.num)])
        var stopped: [String] = []
        try c.forEachRow(
            "SELECT id FROM events WHERE channel = ? AND state IN (\(EventState.unfinished.sqlList))", [.integer(ch.num)]
        ) { s in
            stopped.append(s.text(0))
            return true
        }
        try c.run(
            """
            UPDATE events SET state = ?, failure_reason = 'channel_closed', finished_at_ms = ?
            WHERE channel = ? AND state IN (\(EventState.unfinished.sqlList))
            """, [.text(EventState.failed.rawValue), .integer(now), .integer(ch.num)])
        return (try loadChannel(c, id: id)!, stopped, true)
    }

    /// Records the APNs channel id of a broadcast channel (after APNs created it).
    public func setAPNSChannelID(channelNum: Int64, _ apnsID: String?) throws {
        _ = try write { c in
            try c.run("UPDATE channels SET apns_channel_id = ? WHERE num = ?", [apnsID.map { .text($0) } ?? .null, .integer(channelNum)])
        }
    }
}
