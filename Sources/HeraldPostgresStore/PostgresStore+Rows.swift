import HeraldAPNS
import HeraldPostgres
import HeraldStore

// Rows read by name (PostgresRow looks columns up by name), from one select list per table.
extension PostgresStore {
    static let channelColumns = """
        num, id, bundle_id, mode, environment, storage_policy, apns_channel_id, state, lifecycle, last_seq, last_timestamp,
        current_event, catch_up, min_interval_ms, p10_budget_per_hour, created_at_ms, closed_at_ms, expires_at
        """

    static func channel(_ r: PostgresRow) throws(PostgresError) -> Channel {
        var ch = Channel(
            num: try r.int64("num"), id: try r.text("id"), bundleID: try r.text("bundle_id"),
            mode: ChannelMode(rawValue: try r.text("mode")) ?? .fanout,
            environment: APNSEnvironment(rawValue: try r.text("environment")) ?? .production,
            storagePolicy: StoragePolicy(rawValue: try r.text("storage_policy")) ?? .none,
            apnsChannelID: r["apns_channel_id"]?.textValue, isOpen: ChannelStatus(rawValue: try r.text("state")) == .open,
            lifecycle: ChannelLifecycle(rawValue: try r.text("lifecycle")) ?? .idle, lastSeq: try r.int64("last_seq"),
            lastTimestamp: try r.int64("last_timestamp"), currentEvent: r["current_event"]?.textValue,
            settings: ChannelSettings(
                catchUp: try r.bool("catch_up"), minIntervalMillis: try r.int64("min_interval_ms"),
                priority10BudgetPerHour: try r.int64("p10_budget_per_hour")),
            createdAtMillis: try r.int64("created_at_ms"), closedAtMillis: r["closed_at_ms"]?.int64Value)
        ch.expiresAt = r["expires_at"]?.int64Value
        return ch
    }

    /// How a transaction locks the channel row it reads: a publish takes `noKeyUpdate` (one
    /// publish per channel at a time: seq and timestamps strictly increase), a registration
    /// `keyShare` (never waits for a publish), a close `update` (waits for both, and they
    /// for it: nothing registers on a channel being closed).
    enum RowLock: String {
        case none = ""
        case keyShare = " FOR KEY SHARE"
        case noKeyUpdate = " FOR NO KEY UPDATE"
        case update = " FOR UPDATE"
    }

    static func loadChannel(_ c: PostgresConnection, id: String, lock: RowLock = .none) throws(PostgresError) -> Channel? {
        try c.queryOne("SELECT \(channelColumns) FROM channels WHERE id = $1\(lock.rawValue)", [.text(id)])
            .map { r throws(PostgresError) in try channel(r) }
    }

    static func loadChannel(_ c: PostgresConnection, num: Int64) throws(PostgresError) -> Channel? {
        try c.queryOne("SELECT \(channelColumns) FROM channels WHERE num = $1", [.int8(num)])
            .map { r throws(PostgresError) in try channel(r) }
    }

    /// An event with its channel's id and its progress: the counters are the sums over its
    /// (event, shard) checkpoints; the pass position is that of its least advanced
    /// unfinished shard (a resumption from it repeats, never skips).
    static let eventSelect = """
        SELECT e.id, e.channel, c.id AS channel_id, e.seq, e.kind, e.aps_timestamp, e.payload, e.priority, e.expiration,
               e.state, e.failure_reason, e.superseded_by, e.created_at_ms, e.started_at_ms, e.finished_at_ms,
               e.broadcast_state, e.broadcast_reason, e.send_at,
               COALESCE(p.targets, 0) AS targets, COALESCE(p.sent, 0) AS sent, COALESCE(p.failed, 0) AS failed,
               COALESCE(p.pruned, 0) AS pruned, COALESCE(p.retried, 0) AS retried, COALESCE(p.skipped, 0) AS skipped,
               k.pass_start, k.cursor, COALESCE(k.wrapped, false) AS wrapped
        FROM events e JOIN channels c ON c.num = e.channel
        LEFT JOIN LATERAL (
            SELECT sum(targets)::int8 AS targets, sum(sent)::int8 AS sent, sum(failed)::int8 AS failed,
                   sum(pruned)::int8 AS pruned, sum(retried)::int8 AS retried, sum(skipped)::int8 AS skipped
            FROM checkpoints WHERE event_id = e.id) p ON true
        LEFT JOIN LATERAL (
            SELECT pass_start, cursor, wrapped FROM checkpoints WHERE event_id = e.id
            ORDER BY done, wrapped, cursor NULLS FIRST, shard LIMIT 1) k ON true
        """

    static func event(_ r: PostgresRow) throws(PostgresError) -> EventRecord {
        var counters = EventCounters()
        counters.targets = try r.int64("targets")
        counters.sent = try r.int64("sent")
        counters.failed = try r.int64("failed")
        counters.pruned = try r.int64("pruned")
        counters.retried = try r.int64("retried")
        counters.skipped = try r.int64("skipped")
        var e = EventRecord.stored(
            id: try r.text("id"), channelNum: try r.int64("channel"), channelID: try r.text("channel_id"), seq: try r.int64("seq"),
            kind: LiveActivityEventKind(rawValue: try r.text("kind")) ?? .update, apsTimestamp: try r.int64("aps_timestamp"),
            payload: try r.bytea("payload"), priority: Int(try r.int64("priority")), expiration: r["expiration"]?.int64Value,
            state: EventState(rawValue: try r.text("state")) ?? .failed, failureReason: r["failure_reason"]?.textValue,
            supersededBy: r["superseded_by"]?.textValue, createdAtMillis: try r.int64("created_at_ms"),
            startedAtMillis: r["started_at_ms"]?.int64Value, finishedAtMillis: r["finished_at_ms"]?.int64Value,
            counters: counters, passStart: r["pass_start"]?.byteaValue, cursor: r["cursor"]?.byteaValue,
            wrapped: try r.bool("wrapped"), broadcastState: BroadcastState(rawValue: try r.text("broadcast_state")) ?? .failed,
            broadcastReason: r["broadcast_reason"]?.textValue)
        e.sendAt = r["send_at"]?.int64Value
        return e
    }

    static func loadEvent(_ c: PostgresConnection, id: String) throws(PostgresError) -> EventRecord? {
        try c.queryOne("\(eventSelect) WHERE e.id = $1", [.text(id)]).map { r throws(PostgresError) in try event(r) }
    }
}

extension Array where Element == EventState {
    /// The states as a `text[]` parameter (no state literal in SQL).
    var parameter: PostgresValue { .array(map { .text($0.rawValue) }) }
}

extension Optional where Wrapped == String {
    var parameter: PostgresValue { map { .text($0) } ?? .null }
}

extension Optional where Wrapped == Int64 {
    var parameter: PostgresValue { map { .int8($0) } ?? .null }
}
