import HeraldAPNS
import HeraldPostgres
import HeraldStore

extension PostgresStore {
    /// Inserts a channel and the free lease rows of its shards. Throws `channelExists` (also
    /// for a closed channel of that id: ids are not reused).
    public func createChannel(
        id: String, bundleID: String, mode: ChannelMode, environment: APNSEnvironment, storagePolicy: StoragePolicy,
        apnsChannelID: String?, settings: ChannelSettings = ChannelSettings()
    ) throws -> Channel {
        let now = clock.nowMillis()
        return try write { c in
            // ON CONFLICT: two workers creating the same id at once both see a clean answer.
            guard
                let r = try c.queryOne(
                    """
                    INSERT INTO channels (id, bundle_id, mode, environment, storage_policy, apns_channel_id, created_at_ms,
                                          catch_up, min_interval_ms, p10_budget_per_hour, shard_count)
                    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
                    ON CONFLICT (id) DO NOTHING
                    RETURNING \(Self.channelColumns)
                    """,
                    [
                        .text(id), .text(bundleID), .text(mode.rawValue), .text(environment.rawValue), .text(storagePolicy.rawValue),
                        apnsChannelID.parameter, .int8(now), .bool(settings.catchUp), .int8(settings.minIntervalMillis),
                        .int8(settings.priority10BudgetPerHour), .int(Shards.count),
                    ])
            else { throw StoreError.channelExists(id) }
            let ch = try Self.channel(r)
            try c.run(
                "INSERT INTO leases (channel, shard) SELECT $1, s FROM generate_series(0, $2 - 1) AS s ON CONFLICT DO NOTHING",
                [.int8(ch.num), .int(Shards.count)])
            return ch
        }
    }

    /// The channel `id`, open or closed.
    public func channel(id: String) throws -> Channel? { try read { c in try Self.loadChannel(c, id: id) } }

    public func channel(num: Int64) throws -> Channel? { try read { c in try Self.loadChannel(c, num: num) } }

    /// Every channel, by id.
    public func channels() throws -> [Channel] {
        try read { c in
            try c.query("SELECT \(Self.channelColumns) FROM channels ORDER BY id COLLATE \"C\"").map { r throws(PostgresError) in
                try Self.channel(r)
            }
        }
    }

    /// Live subscriptions of a channel by kind (expired ones not counted).
    public func subscriberCounts(channelNum: Int64) throws -> (activity: Int64, pushToStart: Int64) {
        let now = clock.nowSeconds()
        return try read { c in
            var a: Int64 = 0
            var p: Int64 = 0
            for r in try c.query(
                """
                SELECT kind, count(*) AS n FROM subscriptions
                WHERE channel = $1 AND (expires_at IS NULL OR expires_at > $2) GROUP BY kind
                """, [.int8(channelNum), .int8(now)])
            {
                if try r.int64("kind") == SubscriptionKind.activity.storedCode { a = try r.int64("n") } else { p = try r.int64("n") }
            }
            return (a, p)
        }
    }

    /// Closes a channel: no more publishes, subscriptions dropped, unfinished events failed
    /// with reason `channel_closed`, its leases freed. Returns the closed channel and the ids
    /// of the events it stopped. Throws `channelNotFound`.
    public func closeChannel(id: String) throws -> (Channel, [String]) {
        let now = clock.nowMillis()
        return try write { c in
            let (ch, stopped, _) = try Self.close(c, id: id, now: now)
            return (ch, stopped)
        }
    }

    /// The close, inside a write: the channel, the events it stopped, and whether this call
    /// closed it (false: it was closed already).
    static func close(_ c: PostgresConnection, id: String, now: Int64) throws -> (Channel, [String], closed: Bool) {
        guard let ch = try loadChannel(c, id: id, lock: .update) else { throw StoreError.channelNotFound(id) }
        guard ch.isOpen else { return (ch, [], false) }
        try c.run(
            "UPDATE channels SET state = $1, closed_at_ms = $2 WHERE num = $3",
            [.text(ChannelStatus.closed.rawValue), .int8(now), .int8(ch.num)])
        try c.run("DELETE FROM subscriptions WHERE channel = $1", [.int8(ch.num)])
        let stopped = try c.query(
            """
            UPDATE events SET state = $1, failure_reason = 'channel_closed', finished_at_ms = $2
            WHERE channel = $3 AND state = ANY($4::text[]) RETURNING id
            """, [.text(EventState.failed.rawValue), .int8(now), .int8(ch.num), EventState.unfinished.parameter]
        ).map { r throws(PostgresError) in try r.text("id") }.sorted()
        return (try loadChannel(c, id: id)!, stopped, true)
    }

    /// Records the APNs channel id of a broadcast channel (after APNs created it).
    public func setAPNSChannelID(channelNum: Int64, _ apnsID: String?) throws {
        _ = try write { c in
            try c.run("UPDATE channels SET apns_channel_id = $1 WHERE num = $2", [apnsID.parameter, .int8(channelNum)])
        }
    }
}
