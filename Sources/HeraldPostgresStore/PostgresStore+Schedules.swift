import HeraldAPNS
import HeraldCore
import HeraldPostgres
import HeraldStore

/// Scheduled publishes, the listing, channel settings and expiry on PostgreSQL, as SQLite's
/// `Store+Schedules` does. A schedule and a release lock the channel row as a publish does
/// (`FOR NO KEY UPDATE`), so seq and timestamps keep strictly increasing across workers; a
/// release and a cancel of one event take turns on its row.
extension PostgresStore: Schedules {
    public func schedule(
        channelID: String, event: LiveActivityEvent, body: [UInt8], sendAt: Int64, idempotencyKey: String?, dryRun: Bool
    ) throws -> PublishResult {
        let nowMs = clock.nowMillis()
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try write { c in
                    try Self.schedule(
                        c, channelID: channelID, event: event, body: body, sendAt: sendAt, key: idempotencyKey, dryRun: dryRun,
                        nowMs: nowMs)
                }
            } catch is IdempotencyRace where attempt < 3 {
                continue
            } catch is IdempotencyRace {
                throw StoreError.overloaded
            }
        }
    }

    static func schedule(
        _ c: PostgresConnection, channelID: String, event: LiveActivityEvent, body: [UInt8], sendAt: Int64, key: String?,
        dryRun: Bool, nowMs: Int64
    ) throws -> PublishResult {
        guard let ch = try loadChannel(c, id: channelID, lock: dryRun ? .none : .noKeyUpdate) else {
            throw StoreError.channelNotFound(channelID)
        }
        let existing = dryRun ? nil : try keyedEvent(c, channel: ch, key: key)
        let scheduled: PublishRule.Scheduled
        switch try PublishRule.schedule(channel: ch, event: event, sendAt: sendAt, existing: existing, nowMillis: nowMs) {
        case .replay(let id):
            guard let e = try loadEvent(c, id: id) else { throw StoreError.eventNotFound(id) }
            return PublishResult.stored(event: e, created: false, targets: 0, limit: 0, channel: ch)
        case .schedule(let s): scheduled = s
        }
        var record = scheduled.record(id: newID("evt_"), channel: ch, event: event, sendAt: sendAt, createdAtMillis: nowMs)
        if dryRun {
            let n = try dryRunTargets(c, channel: ch, event: event, nowSeconds: nowMs / 1000)
            record.counters.targets = n
            return PublishResult.stored(event: record, created: true, targets: n, limit: scheduled.limit, channel: ch)
        }
        if let old = scheduled.forgetKeyOf {
            try c.run("UPDATE events SET idempotency_key = NULL WHERE id = $1", [.text(old)])
        }
        do {
            try c.run(
                """
                INSERT INTO events (id, channel, seq, kind, aps_timestamp, payload, priority, expiration, state,
                                    idempotency_key, created_at_ms, broadcast_state, send_at, body)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
                """,
                [
                    .text(record.id), .int8(ch.num), .int8(record.seq), .text(event.kind.rawValue), .int8(record.apsTimestamp),
                    .bytea(record.payload), .int(record.priority), event.expiration.parameter, .text(record.state.rawValue),
                    key.parameter, .int8(nowMs), .text(record.broadcastState.rawValue), .int8(sendAt), .bytea(body),
                ])
        } catch {
            if error.sqlState == .uniqueViolation && error.constraint == "events_idempotency" { throw IdempotencyRace() }
            throw error
        }
        try c.run("UPDATE channels SET last_seq = $1 WHERE num = $2", [.int8(record.seq), .int8(ch.num)])
        return PublishResult.stored(event: record, created: true, targets: 0, limit: scheduled.limit, channel: ch)
    }

    public func release(eventID: String) throws -> ScheduleRelease {
        let nowMs = clock.nowMillis()
        return try write { c in
            guard
                let head = try c.queryOne(
                    "SELECT channel, body FROM events WHERE id = $1 AND state = $2 FOR UPDATE",
                    [.text(eventID), .text(EventState.scheduled.rawValue)])
            else { return .notScheduled }
            let num = try head.int64("channel")
            guard let channelID = try c.queryValue("SELECT id FROM channels WHERE num = $1", [.int8(num)])?.textValue,
                let ch = try Self.loadChannel(c, id: channelID, lock: .noKeyUpdate)
            else { return .notScheduled }
            let decision: PublishRule.Release
            if let body = head["body"]?.byteaValue, let event = ScheduledBody.event(body) {
                decision = PublishRule.release(channel: ch, event: event, nowMillis: nowMs)
            } else {
                decision = .fail(reason: "invalid_body")
            }
            switch decision {
            case .send(let a):
                try c.run(
                    """
                    UPDATE events SET seq = $1, aps_timestamp = $2, payload = $3, priority = $4, state = $5, broadcast_state = $6
                    WHERE id = $7
                    """,
                    [
                        .int8(a.seq), .int8(a.apsTimestamp), .bytea(a.payload), .int(a.priority), .text(EventState.queued.rawValue),
                        .text(a.broadcastState.rawValue), .text(eventID),
                    ])
                try c.run(
                    "UPDATE channels SET last_seq = $1, last_timestamp = $2, lifecycle = $3, current_event = $4 WHERE num = $5",
                    [
                        .int8(a.seq), .int8(a.apsTimestamp), .text(a.lifecycle.rawValue),
                        a.becomesCurrent ? .text(eventID) : .null, .int8(ch.num),
                    ])
                guard let sent = try Self.loadEvent(c, id: eventID) else { return .notScheduled }
                // Every worker hears of it as of a publish (the holders of its shards send it).
                try c.notify(EventFeed.channel, payload: eventID)
                return .sent(sent, ch)
            case .fail(let reason):
                try c.run(
                    "UPDATE events SET state = $1, failure_reason = $2, finished_at_ms = $3 WHERE id = $4",
                    [.text(EventState.failed.rawValue), .text(reason), .int8(nowMs), .text(eventID)])
            case .supersede(let by):
                try c.run(
                    "UPDATE events SET state = $1, superseded_by = $2, finished_at_ms = $3 WHERE id = $4",
                    [.text(EventState.superseded.rawValue), by.parameter, .int8(nowMs), .text(eventID)])
            }
            // Refused when due: it reached `failed`/`superseded` without the fan-out, so its
            // `event.finished` is recorded here, in the same transaction.
            try Self.reportFinished(c, eventID: eventID, channelNum: ch.num, now: nowMs)
            return try Self.loadEvent(c, id: eventID).map { .refused($0) } ?? .notScheduled
        }
    }

    public func dueScheduled(atOrBefore: Int64, limit: Int) throws -> [String] {
        try read { c in
            try c.query(
                "SELECT id FROM events WHERE state = $1 AND send_at <= $2 ORDER BY send_at, seq LIMIT $3",
                [.text(EventState.scheduled.rawValue), .int8(atOrBefore), .int(limit)]
            ).map { r throws(PostgresError) in try r.text("id") }
        }
    }

    public func nextScheduledAt() throws -> Int64? {
        try read { c in
            try c.queryValue("SELECT min(send_at) FROM events WHERE state = $1", [.text(EventState.scheduled.rawValue)])?.int64Value
        }
    }

    public func cancel(channelID: String, eventID: String) throws -> EventRecord {
        let nowMs = clock.nowMillis()
        return try write { c in
            guard let e = try Self.loadEvent(c, id: eventID), e.channelID == channelID else { throw StoreError.eventNotFound(eventID) }
            // The row lock orders this after a release under way: it then finds it queued.
            let n = try c.run(
                "UPDATE events SET state = $1, finished_at_ms = $2 WHERE id = $3 AND state = $4",
                [.text(EventState.cancelled.rawValue), .int8(nowMs), .text(eventID), .text(EventState.scheduled.rawValue)])
            guard let now = try Self.loadEvent(c, id: eventID) else { throw StoreError.eventNotFound(eventID) }
            guard n == 1 else { throw StoreError.notScheduled(id: eventID, state: now.state) }
            return now
        }
    }

    public func failScheduled(channelNum: Int64, reason: String) throws -> Int {
        let nowMs = clock.nowMillis()
        return try write { c in
            let failed = try c.query(
                "UPDATE events SET state = $1, failure_reason = $2, finished_at_ms = $3 WHERE channel = $4 AND state = $5 RETURNING id",
                [
                    .text(EventState.failed.rawValue), .text(reason), .int8(nowMs), .int8(channelNum),
                    .text(EventState.scheduled.rawValue),
                ])
            for row in failed { try Self.reportFinished(c, eventID: try row.text("id"), channelNum: channelNum, now: nowMs) }
            return failed.count
        }
    }

    public func events(channelID: String, state: EventState?, beforeSeq: Int64?, limit: Int) throws -> [EventRecord] {
        try read { c in
            guard let ch = try Self.loadChannel(c, id: channelID) else { throw StoreError.channelNotFound(channelID) }
            return try c.query(
                """
                \(Self.eventSelect)
                WHERE e.channel = $1 AND e.seq < $2 AND ($3::text IS NULL OR e.state = $3) ORDER BY e.seq DESC LIMIT $4
                """, [.int8(ch.num), .int8(beforeSeq ?? Int64.max), state.map { .text($0.rawValue) } ?? .null, .int(limit)]
            ).map { r throws(PostgresError) in try Self.event(r) }
        }
    }

    public func updateChannel(id: String, _ change: ChannelChange) throws -> Channel {
        try write { c in
            guard let ch = try Self.loadChannel(c, id: id, lock: .noKeyUpdate) else { throw StoreError.channelNotFound(id) }
            let expires: Int64?
            switch change.expiresAt {
            case .none: expires = ch.expiresAt
            case .some(let v): expires = v
            }
            guard
                let r = try c.queryOne(
                    """
                    UPDATE channels SET catch_up = $1, min_interval_ms = $2, p10_budget_per_hour = $3, expires_at = $4 WHERE num = $5
                    RETURNING \(Self.channelColumns)
                    """,
                    [
                        .bool(change.catchUp ?? ch.catchUp), .int8(change.minIntervalMillis ?? ch.minIntervalMillis),
                        .int8(change.priority10BudgetPerHour ?? ch.priority10BudgetPerHour), expires.parameter, .int8(ch.num),
                    ])
            else { throw StoreError.channelNotFound(id) }
            return try Self.channel(r)
        }
    }

    public func expiringChannels(atOrBefore: Int64, limit: Int) throws -> [Channel] {
        try read { c in
            try c.query(
                """
                SELECT \(Self.channelColumns) FROM channels WHERE expires_at IS NOT NULL AND state = $1 AND expires_at <= $2
                ORDER BY expires_at LIMIT $3
                """, [.text(ChannelStatus.open.rawValue), .int8(atOrBefore), .int(limit)]
            ).map { r throws(PostgresError) in try Self.channel(r) }
        }
    }

    public func nextChannelExpiry() throws -> Int64? {
        try read { c in
            try c.queryValue(
                "SELECT min(expires_at) FROM channels WHERE expires_at IS NOT NULL AND state = $1", [.text(ChannelStatus.open.rawValue)])?
                .int64Value
        }
    }

    public func makeDutyLock() throws -> DutyLock { PostgresDutyLock(pool: pool) }
}

/// The duty lock on PostgreSQL: `pg_try_advisory_lock` on a connection of its own, held for
/// as long as that session lives. A worker that dies (or loses its session) loses the lock
/// with it, at once, by the server; the next worker's `hold` takes it.
final class PostgresDutyLock: DutyLock, @unchecked Sendable {
    // @unchecked: `state` is guarded by its own lock.
    /// "HERDUTY1": the advisory lock key (the migrations use another).
    static let key: Int64 = 0x4845_5244_5554_5931
    let pool: ConnectionPool
    let state = Locked<(connection: PostgresConnection?, held: Bool)>((nil, false))

    init(pool: ConnectionPool) { self.pool = pool }

    func hold() -> Bool {
        state.withLock { s in
            do {
                if s.connection == nil { s.connection = try pool.openDedicated() }
                guard let c = s.connection else { return false }
                if s.held {
                    // A lost session lost the lock: the check fails and the next turn retries.
                    _ = try c.queryValue("SELECT 1")
                    return true
                }
                s.held = try c.queryValue("SELECT pg_try_advisory_lock($1)", [.int8(Self.key)])?.boolValue ?? false
                return s.held
            } catch {
                s.connection?.close()
                s.connection = nil
                s.held = false
                return false
            }
        }
    }

    func release() {
        state.withLock { s in
            if s.held, let c = s.connection { _ = try? c.queryValue("SELECT pg_advisory_unlock($1)", [.int8(Self.key)]) }
            s.connection?.close()
            s.connection = nil
            s.held = false
        }
    }
}

extension PostgresStore {
    /// Records `event.finished` for an event that ended outside the fan-out (a scheduled one
    /// refused when due, or failed by its channel's close), while some webhook wants it.
    static func reportFinished(_ c: PostgresConnection, eventID: String, channelNum: Int64, now: Int64) throws(PostgresError) {
        try report(
            c, type: "event.finished", channelSQL: "SELECT id FROM channels WHERE num = $1", .int8(channelNum),
            payload: JSON.object(["event_id": .string(eventID)]).text, now: now)
    }
}
