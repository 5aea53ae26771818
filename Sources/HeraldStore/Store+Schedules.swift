import HeraldAPNS
import HeraldCore
import HeraldSQL

/// Scheduled publishes, the listing, channel settings and expiry on SQLite (`Schedules`).
extension Store: Schedules {
    public func schedule(
        channelID: String, event: LiveActivityEvent, body: [UInt8], sendAt: Int64, idempotencyKey: String?, dryRun: Bool
    ) throws -> PublishResult {
        let nowMs = clock.nowMillis()
        let work: @Sendable (SQLiteConnection) throws -> PublishResult = { c in
            guard let ch = try Self.loadChannel(c, id: channelID) else { throw StoreError.channelNotFound(channelID) }
            let existing = dryRun ? nil : try Self.keyedEvent(c, channel: ch, key: idempotencyKey)
            let scheduled: PublishRule.Scheduled
            switch try PublishRule.schedule(channel: ch, event: event, sendAt: sendAt, existing: existing, nowMillis: nowMs) {
            case .replay(let id):
                guard let e = try Self.loadEvent(c, id: id) else { throw StoreError.eventNotFound(id) }
                return PublishResult(event: e, created: false, targets: 0, limit: 0, channel: ch)
            case .schedule(let s): scheduled = s
            }
            var record = scheduled.record(id: Self.newID("evt_"), channel: ch, event: event, sendAt: sendAt, createdAtMillis: nowMs)
            if dryRun {
                let n = try Self.dryRunTargets(c, channel: ch, event: event, nowSeconds: nowMs / 1000)
                record.counters.targets = n
                return PublishResult(event: record, created: true, targets: n, limit: scheduled.limit, channel: ch)
            }
            if let old = scheduled.forgetKeyOf {
                try c.run("UPDATE events SET idempotency_key = NULL WHERE id = ?", [.text(old)])
            }
            try c.run(
                """
                INSERT INTO events (id, channel, seq, kind, aps_timestamp, payload, priority, expiration, state,
                                    idempotency_key, created_at_ms, broadcast_state, send_at, body)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
                [
                    .text(record.id), .integer(ch.num), .integer(record.seq), .text(event.kind.rawValue),
                    .integer(record.apsTimestamp), .blob(record.payload), .integer(Int64(record.priority)),
                    event.expiration.map { .integer($0) } ?? .null, .text(record.state.rawValue),
                    idempotencyKey.map { .text($0) } ?? .null, .integer(nowMs), .text(record.broadcastState.rawValue),
                    .integer(sendAt), .blob(body),
                ])
            // The provisional seq is taken from the channel's counter; nothing else changes
            // until the event is released.
            try c.run("UPDATE channels SET last_seq = ? WHERE num = ?", [.integer(record.seq), .integer(ch.num)])
            return PublishResult(event: record, created: true, targets: 0, limit: scheduled.limit, channel: ch)
        }
        if dryRun { return try read { c in try work(c) } }
        return try write(work)
    }

    public func release(eventID: String) throws -> ScheduleRelease {
        let nowMs = clock.nowMillis()
        return try write { c in
            guard let e = try Self.loadEvent(c, id: eventID), e.state == .scheduled,
                let body = try c.queryValue("SELECT body FROM events WHERE id = ?", [.text(eventID)])?.blobValue,
                let ch = try Self.loadChannel(c, num: e.channelNum)
            else { return .notScheduled }
            let decision: PublishRule.Release
            if let event = ScheduledBody.event(body) {
                decision = PublishRule.release(channel: ch, event: event, nowMillis: nowMs)
            } else {
                decision = .fail(reason: "invalid_body")
            }
            switch decision {
            case .send(let a):
                try c.run(
                    """
                    UPDATE events SET seq = ?, aps_timestamp = ?, payload = ?, priority = ?, state = ?, broadcast_state = ?
                    WHERE id = ?
                    """,
                    [
                        .integer(a.seq), .integer(a.apsTimestamp), .blob(a.payload), .integer(Int64(a.priority)),
                        .text(EventState.queued.rawValue), .text(a.broadcastState.rawValue), .text(eventID),
                    ])
                try c.run(
                    "UPDATE channels SET last_seq = ?, last_timestamp = ?, lifecycle = ?, current_event = ? WHERE num = ?",
                    [
                        .integer(a.seq), .integer(a.apsTimestamp), .text(a.lifecycle.rawValue),
                        a.becomesCurrent ? .text(eventID) : .null, .integer(ch.num),
                    ])
                // The fan-out takes the channel as the release read it, as with a publish.
                guard let sent = try Self.loadEvent(c, id: eventID) else { return .notScheduled }
                return .sent(sent, ch)
            case .fail(let reason):
                try c.run(
                    "UPDATE events SET state = ?, failure_reason = ?, finished_at_ms = ? WHERE id = ?",
                    [.text(EventState.failed.rawValue), .text(reason), .integer(nowMs), .text(eventID)])
            case .supersede(let by):
                try c.run(
                    "UPDATE events SET state = ?, superseded_by = ?, finished_at_ms = ? WHERE id = ?",
                    [.text(EventState.superseded.rawValue), by.map { .text($0) } ?? .null, .integer(nowMs), .text(eventID)])
            }
            // Refused when due: it reached `failed`/`superseded` without the fan-out, so its
            // `event.finished` is recorded here, in the same transaction.
            try Self.reportFinished(c, eventID: eventID, channelNum: ch.num, now: nowMs)
            return try Self.loadEvent(c, id: eventID).map { .refused($0) } ?? .notScheduled
        }
    }

    public func dueScheduled(atOrBefore: Int64, limit: Int) throws -> [String] {
        try read { c in
            var out: [String] = []
            try c.forEachRow(
                "SELECT id FROM events WHERE state = ? AND send_at <= ? ORDER BY send_at, seq LIMIT ?",
                [.text(EventState.scheduled.rawValue), .integer(atOrBefore), .integer(Int64(limit))]
            ) { s in
                out.append(s.text(0))
                return true
            }
            return out
        }
    }

    public func nextScheduledAt() throws -> Int64? {
        try read { c in
            try c.queryValue("SELECT MIN(send_at) FROM events WHERE state = ?", [.text(EventState.scheduled.rawValue)])?.int64Value
        }
    }

    public func cancel(channelID: String, eventID: String) throws -> EventRecord {
        let nowMs = clock.nowMillis()
        return try write { c in
            guard let e = try Self.loadEvent(c, id: eventID), e.channelID == channelID else { throw StoreError.eventNotFound(eventID) }
            guard e.state == .scheduled else { throw StoreError.notScheduled(id: eventID, state: e.state) }
            try c.run(
                "UPDATE events SET state = ?, finished_at_ms = ? WHERE id = ?",
                [.text(EventState.cancelled.rawValue), .integer(nowMs), .text(eventID)])
            return try Self.loadEvent(c, id: eventID)!
        }
    }

    public func failScheduled(channelNum: Int64, reason: String) throws -> Int {
        let nowMs = clock.nowMillis()
        return try write { c in
            let failed = try c.query(
                "UPDATE events SET state = ?, failure_reason = ?, finished_at_ms = ? WHERE channel = ? AND state = ? RETURNING id",
                [
                    .text(EventState.failed.rawValue), .text(reason), .integer(nowMs), .integer(channelNum),
                    .text(EventState.scheduled.rawValue),
                ])
            for id in failed.compactMap({ $0[0].textValue }) {
                try Self.reportFinished(c, eventID: id, channelNum: channelNum, now: nowMs)
            }
            return failed.count
        }
    }

    public func events(channelID: String, state: EventState?, beforeSeq: Int64?, limit: Int) throws -> [EventRecord] {
        try read { c in
            guard let ch = try Self.loadChannel(c, id: channelID) else { throw StoreError.channelNotFound(channelID) }
            var sql = "SELECT \(Self.eventColumns) FROM \(Self.eventsJoined) WHERE e.channel = ? AND e.seq < ?"
            var args: [SQLValue] = [.integer(ch.num), .integer(beforeSeq ?? Int64.max)]
            if let state {
                sql += " AND e.state = ?"
                args.append(.text(state.rawValue))
            }
            sql += " ORDER BY e.seq DESC LIMIT ?"
            args.append(.integer(Int64(limit)))
            var out: [EventRecord] = []
            try c.forEachRow(sql, args) { s in
                out.append(Self.event(from: s))
                return true
            }
            return out
        }
    }

    public func updateChannel(id: String, _ change: ChannelChange) throws -> Channel {
        try write { c in
            guard let ch = try Self.loadChannel(c, id: id) else { throw StoreError.channelNotFound(id) }
            let expires: SQLValue
            switch change.expiresAt {
            case .none: expires = ch.expiresAt.map { .integer($0) } ?? .null
            case .some(let v): expires = v.map { .integer($0) } ?? .null
            }
            try c.run(
                "UPDATE channels SET catch_up = ?, min_interval_ms = ?, p10_budget_per_hour = ?, expires_at = ? WHERE num = ?",
                [
                    .integer((change.catchUp ?? ch.catchUp) ? 1 : 0), .integer(change.minIntervalMillis ?? ch.minIntervalMillis),
                    .integer(change.priority10BudgetPerHour ?? ch.priority10BudgetPerHour), expires, .integer(ch.num),
                ])
            return try Self.loadChannel(c, id: id)!
        }
    }

    public func expiringChannels(atOrBefore: Int64, limit: Int) throws -> [Channel] {
        try read { c in
            var out: [Channel] = []
            try c.forEachRow(
                """
                SELECT \(Self.channelColumns) FROM channels WHERE expires_at IS NOT NULL AND state = ? AND expires_at <= ?
                ORDER BY expires_at LIMIT ?
                """, [.text(ChannelStatus.open.rawValue), .integer(atOrBefore), .integer(Int64(limit))]
            ) { s in
                out.append(Self.channel(from: s))
                return true
            }
            return out
        }
    }

    public func nextChannelExpiry() throws -> Int64? {
        try read { c in
            try c.queryValue(
                "SELECT MIN(expires_at) FROM channels WHERE expires_at IS NOT NULL AND state = ?", [.text(ChannelStatus.open.rawValue)])?
                .int64Value
        }
    }

    /// One process per SQLite file: it always holds the duty.
    public func makeDutyLock() throws -> DutyLock { AlwaysHeld() }

    final class AlwaysHeld: DutyLock {
        func hold() -> Bool { true }
        func release() {}
    }
}

/// The stored body of a scheduled publish: the validated publish body without `send_at`.
public enum ScheduledBody {
    /// The event to release, validated again (nil: the stored body no longer validates).
    public static func event(_ body: [UInt8]) -> LiveActivityEvent? {
        guard let j = try? JSON.parse(body) else { return nil }
        return try? LiveActivityEvent.validate(j)
    }
}

extension Store {
    /// Records `event.finished` for an event that ended outside the fan-out (a scheduled one
    /// refused when due, or failed by its channel's close), while some webhook wants it.
    static func reportFinished(_ c: SQLiteConnection, eventID: String, channelNum: Int64, now: Int64) throws {
        try report(
            c, type: "event.finished", channelSQL: "SELECT id FROM channels WHERE num = ?", .integer(channelNum),
            payload: JSON.object(["event_id": .string(eventID)]).text, now: now)
    }
}
