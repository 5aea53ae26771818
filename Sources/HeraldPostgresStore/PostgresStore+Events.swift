import HeraldAPNS
import HeraldPostgres
import HeraldStore

extension PostgresStore {
    /// Accepts a publish as SQLite's `Store` does (`PublishRule.decide` inside one
    /// transaction) with the channel row locked (`FOR NO KEY UPDATE`): publishes of a channel
    /// on any number of workers take turns, so `seq` and `aps.timestamp` strictly increase.
    /// The same `Idempotency-Key` posted twice at once makes one event: the second waits
    /// for the lock, then finds the first's event; and should two ever pass the lookup, the
    /// unique index `events_idempotency` refuses the second (23505) and the publish is
    /// decided again, finding the first. With `dryRun`, does every check and commits nothing.
    public func publish(
        channelID: String, event: LiveActivityEvent, idempotencyKey: String?, dryRun: Bool
    ) throws -> PublishResult {
        let nowMs = clock.nowMillis()
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try write { c in
                    try Self.publish(c, channelID: channelID, event: event, key: idempotencyKey, dryRun: dryRun, nowMs: nowMs)
                }
            } catch is IdempotencyRace where attempt < 3 {
                continue
            } catch is IdempotencyRace {
                throw StoreError.overloaded
            }
        }
    }

    static func publish(
        _ c: PostgresConnection, channelID: String, event: LiveActivityEvent, key: String?, dryRun: Bool, nowMs: Int64
    ) throws -> PublishResult {
        guard let ch = try loadChannel(c, id: channelID, lock: dryRun ? .none : .noKeyUpdate) else {
            throw StoreError.channelNotFound(channelID)
        }
        let existing = dryRun ? nil : try keyedEvent(c, channel: ch, key: key)
        let accepted: PublishRule.Accepted
        switch try PublishRule.decide(channel: ch, event: event, existing: existing, nowMillis: nowMs) {
        case .replay(let id):
            guard let e = try loadEvent(c, id: id) else { throw StoreError.eventNotFound(id) }
            return PublishResult.stored(event: e, created: false, targets: 0, limit: 0, channel: ch)
        case .accept(let a): accepted = a
        }
        var record = accepted.record(id: newID("evt_"), channel: ch, event: event, createdAtMillis: nowMs)
        if dryRun {
            let n = try dryRunTargets(c, channel: ch, event: event, nowSeconds: nowMs / 1000)
            record.counters.targets = n
            return PublishResult.stored(event: record, created: true, targets: n, limit: accepted.limit, channel: ch)
        }
        if let old = accepted.forgetKeyOf {
            try c.run("UPDATE events SET idempotency_key = NULL WHERE id = $1", [.text(old)])
        }
        if let lost = insertEvent(c, record: record, event: event, channel: ch, key: key, nowMs: nowMs) {
            if lost.sqlState == .uniqueViolation && lost.constraint == "events_idempotency" { throw IdempotencyRace() }
            throw lost
        }
        // Every worker hears of it once it commits (one notification per event, its id).
        try c.notify(EventFeed.channel, payload: record.id)
        try c.run(
            "UPDATE channels SET last_seq = $1, last_timestamp = $2, lifecycle = $3, current_event = $4 WHERE num = $5",
            [
                .int8(record.seq), .int8(record.apsTimestamp), .text(accepted.lifecycle.rawValue),
                accepted.becomesCurrent ? .text(record.id) : .null, .int8(ch.num),
            ])
        return PublishResult.stored(event: record, created: true, targets: 0, limit: accepted.limit, channel: ch)
    }

    /// Another transaction committed an event with the same key between this one's lookup
    /// and its insert: decide the publish again (it then finds that event).
    struct IdempotencyRace: Error {}

    /// Inserts the event; returns the error instead of throwing it (nil: inserted).
    static func insertEvent(
        _ c: PostgresConnection, record: EventRecord, event: LiveActivityEvent, channel ch: Channel, key: String?, nowMs: Int64
    ) -> PostgresError? {
        do {
            try insertEventRow(c, record: record, event: event, channel: ch, key: key, nowMs: nowMs)
            return nil
        } catch {
            return error
        }
    }

    static func insertEventRow(
        _ c: PostgresConnection, record: EventRecord, event: LiveActivityEvent, channel ch: Channel, key: String?, nowMs: Int64
    ) throws(PostgresError) {
        try c.run(
            """
            INSERT INTO events (id, channel, seq, kind, aps_timestamp, payload, priority, expiration, state,
                                idempotency_key, created_at_ms, broadcast_state)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
            """,
            [
                .text(record.id), .int8(ch.num), .int8(record.seq), .text(event.kind.rawValue), .int8(record.apsTimestamp),
                .bytea(record.payload), .int(record.priority), event.expiration.parameter, .text(record.state.rawValue),
                key.parameter, .int8(nowMs), .text(record.broadcastState.rawValue),
            ])
    }

    /// The event `eventID` of channel `channelID`. Throws `eventNotFound`.
    public func event(channelID: String, eventID: String) throws -> EventRecord {
        guard let e = try event(id: eventID), e.channelID == channelID else { throw StoreError.eventNotFound(eventID) }
        return e
    }

    public func event(id: String) throws -> EventRecord? { try read { c in try Self.loadEvent(c, id: id) } }

    /// The newest event of a channel.
    public func lastEvent(channelNum: Int64) throws -> EventRecord? {
        try read { c in
            try c.queryOne("\(Self.eventSelect) WHERE e.channel = $1 ORDER BY e.seq DESC LIMIT 1", [.int8(channelNum)])
                .map { r throws(PostgresError) in try Self.event(r) }
        }
    }

    /// Queued and sending events, by channel then sequence.
    public func unfinishedEvents() throws -> [EventRecord] {
        try read { c in
            try c.query("\(Self.eventSelect) WHERE e.state = ANY($1::text[]) ORDER BY e.channel, e.seq", [EventState.unfinished.parameter])
                .map { r throws(PostgresError) in try Self.event(r) }
        }
    }

    /// A channel's queued and sending events with `afterSeq < seq <= throughSeq`, in order.
    public func unfinishedEvents(channelNum: Int64, afterSeq: Int64, throughSeq: Int64) throws -> [EventRecord] {
        try read { c in
            try c.query(
                """
                \(Self.eventSelect)
                WHERE e.channel = $1 AND e.seq > $2 AND e.seq <= $3 AND e.state = ANY($4::text[]) ORDER BY e.seq
                """, [.int8(channelNum), .int8(afterSeq), .int8(throughSeq), EventState.unfinished.parameter]
            ).map { r throws(PostgresError) in try Self.event(r) }
        }
    }

    /// The highest sequence number of a channel's finished events below its lowest
    /// unfinished one (0 if none).
    public func lastFinishedSeq(channelNum: Int64) throws -> Int64 {
        try read { c in
            try c.queryValue(
                """
                SELECT COALESCE(max(seq), 0) FROM events WHERE channel = $1 AND state = ANY($2::text[])
                  AND seq < COALESCE((SELECT min(seq) FROM events WHERE channel = $1 AND state = ANY($3::text[])),
                                     9223372036854775807)
                """,
                [.int8(channelNum), EventState.finished.parameter, EventState.unfinished.parameter])?.int64Value ?? 0
        }
    }

    /// Records the outcome of an event's broadcast request.
    public func setBroadcastState(eventID: String, state: BroadcastState, reason: String?) throws {
        _ = try write { c in
            try c.run(
                "UPDATE events SET broadcast_state = $1, broadcast_reason = $2 WHERE id = $3",
                [.text(state.rawValue), reason.parameter, .text(eventID)])
        }
    }

    /// Deletes finished events older than `olderThanMillis` (keeping each channel's current
    /// event) and forgets idempotency keys past their window.
    public func sweepEvents(olderThanMillis: Int64) throws -> Int {
        let now = clock.nowMillis()
        return try write { c in
            try c.run(
                "UPDATE events SET idempotency_key = NULL WHERE idempotency_key IS NOT NULL AND created_at_ms < $1",
                [.int8(now - PublishRule.idempotencyWindowMillis)])
            return try c.run(
                """
                DELETE FROM events WHERE state = ANY($1::text[]) AND created_at_ms < $2
                  AND id NOT IN (SELECT current_event FROM channels WHERE current_event IS NOT NULL)
                """, [EventState.finished.parameter, .int8(now - olderThanMillis)])
        }
    }
}

extension PostgresStore {
    /// The event an `Idempotency-Key` already names on an open channel (nil: none, or no key).
    static func keyedEvent(_ c: PostgresConnection, channel ch: Channel, key: String?) throws -> PublishRule.KeyedEvent? {
        guard let key, ch.isOpen,
            let r = try c.queryOne(
                "SELECT id, created_at_ms FROM events WHERE channel = $1 AND idempotency_key = $2", [.int8(ch.num), .text(key)])
        else { return nil }
        return PublishRule.KeyedEvent(id: try r.text("id"), createdAtMillis: try r.int64("created_at_ms"))
    }

    /// How many subscriptions a dry run of `event` would target (a start: the push-to-start
    /// tokens; otherwise the activity tokens, none on a broadcast-only channel).
    static func dryRunTargets(_ c: PostgresConnection, channel ch: Channel, event: LiveActivityEvent, nowSeconds: Int64) throws -> Int64 {
        guard ch.mode.usesTokens || event.kind == .start else { return 0 }
        return try countLive(c, channelNum: ch.num, kind: event.kind == .start ? .pushToStart : .activity, now: nowSeconds)
    }
}
