import HeraldAPNS
import HeraldCore
import HeraldSQL

/// What a publish produced.
public struct PublishResult: Sendable {
    public var event: EventRecord
    /// False when an `Idempotency-Key` matched an earlier event (which is returned).
    public var created: Bool
    /// Dry runs: the targets the event would have now, and the limit it was checked against.
    public var targets: Int64
    public var limit: Int
    public var channel: Channel
}

extension Store {
    /// How far ahead of the server's clock a publisher's `aps.timestamp` may be.
    public static let maxTimestampSkew = PublishRule.maxTimestampSkew
    /// An `Idempotency-Key` is remembered this long.
    public static let idempotencyWindowMillis = PublishRule.idempotencyWindowMillis

    static let eventColumns = EventColumn.selectList
    static let eventsJoined = "events e JOIN channels c ON c.num = e.channel"

    static func event(from s: Statement) -> EventRecord {
        typealias C = EventColumn
        var counters = EventCounters()
        counters.targets = s.int64(C.targets)
        counters.sent = s.int64(C.sent)
        counters.failed = s.int64(C.failed)
        counters.pruned = s.int64(C.pruned)
        counters.retried = s.int64(C.retried)
        counters.skipped = s.int64(C.skipped)
        var r = EventRecord(
            id: s.text(C.id), channelNum: s.int64(C.channelNum), channelID: s.text(C.channelID), seq: s.int64(C.seq),
            kind: LiveActivityEventKind(rawValue: s.text(C.kind)) ?? .update, apsTimestamp: s.int64(C.apsTimestamp),
            payload: s.blob(C.payload), priority: s.int(C.priority), expiration: s.optionalInt64(C.expiration),
            state: EventState(rawValue: s.text(C.state)) ?? .failed, failureReason: s.optionalText(C.failureReason),
            supersededBy: s.optionalText(C.supersededBy), createdAtMillis: s.int64(C.createdAt),
            startedAtMillis: s.optionalInt64(C.startedAt), finishedAtMillis: s.optionalInt64(C.finishedAt), counters: counters,
            passStart: s.optionalBlob(C.passStart), cursor: s.optionalBlob(C.cursor), wrapped: s.int64(C.wrapped) != 0,
            broadcastState: BroadcastState(rawValue: s.text(C.broadcastState)) ?? .failed,
            broadcastReason: s.optionalText(C.broadcastReason))
        r.sendAt = s.optionalInt64(C.sendAt)
        return r
    }

    static func loadEvent(_ c: SQLiteConnection, id: String) throws -> EventRecord? {
        let s = try c.cached("SELECT \(eventColumns) FROM \(eventsJoined) WHERE e.id = ?")
        try s.bind(1, text: id)
        return try s.step() ? event(from: s) : nil
    }

    /// The payload limit of an event on a channel (`PublishRule.payloadLimit`).
    public static func payloadLimit(mode: ChannelMode, kind: LiveActivityEventKind) -> Int {
        PublishRule.payloadLimit(mode: mode, kind: kind)
    }

    /// Accepts a publish: checks the channel and the order guard (design delivery 3 and 8),
    /// gives the event its strictly increasing `aps.timestamp`, renders the exact bytes,
    /// checks their size, and commits the event before returning (the 202 promise). With
    /// `dryRun`, does every check and commits nothing.
    public func publish(
        channelID: String, event: LiveActivityEvent, idempotencyKey: String?, dryRun: Bool
    ) throws -> PublishResult {
        let nowMs = clock.nowMillis()
        let now = nowMs / 1000
        let body: @Sendable (SQLiteConnection) throws -> PublishResult = { c in
            guard let ch = try Self.loadChannel(c, id: channelID) else { throw StoreError.channelNotFound(channelID) }
            let existing = dryRun ? nil : try Self.keyedEvent(c, channel: ch, key: idempotencyKey)
            let accepted: PublishRule.Accepted
            switch try PublishRule.decide(channel: ch, event: event, existing: existing, nowMillis: nowMs) {
            case .replay(let id):
                guard let e = try Self.loadEvent(c, id: id) else { throw StoreError.eventNotFound(id) }
                return PublishResult(event: e, created: false, targets: 0, limit: 0, channel: ch)
            case .accept(let a): accepted = a
            }
            var record = accepted.record(id: Self.newID("evt_"), channel: ch, event: event, createdAtMillis: nowMs)
            if dryRun {
                let n = try Self.dryRunTargets(c, channel: ch, event: event, nowSeconds: now)
                record.counters.targets = n
                return PublishResult(event: record, created: true, targets: n, limit: accepted.limit, channel: ch)
            }
            if let old = accepted.forgetKeyOf {
                try c.run("UPDATE events SET idempotency_key = NULL WHERE id = ?", [.text(old)])
            }
            try c.run(
                """
                INSERT INTO events (id, channel, seq, kind, aps_timestamp, payload, priority, expiration, state,
                                    idempotency_key, created_at_ms, broadcast_state)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
                [
                    .text(record.id), .integer(ch.num), .integer(record.seq), .text(event.kind.rawValue),
                    .integer(record.apsTimestamp), .blob(record.payload), .integer(Int64(record.priority)),
                    event.expiration.map { .integer($0) } ?? .null, .text(record.state.rawValue),
                    idempotencyKey.map { .text($0) } ?? .null, .integer(nowMs), .text(record.broadcastState.rawValue),
                ])
            try c.run(
                "UPDATE channels SET last_seq = ?, last_timestamp = ?, lifecycle = ?, current_event = ? WHERE num = ?",
                [
                    .integer(record.seq), .integer(record.apsTimestamp), .text(accepted.lifecycle.rawValue),
                    accepted.becomesCurrent ? .text(record.id) : .null, .integer(ch.num),
                ])
            return PublishResult(event: record, created: true, targets: 0, limit: accepted.limit, channel: ch)
        }
        if dryRun {
            return try read { c in try body(c) }
        }
        return try write(body)
    }

    /// The event `eventID` of channel `channelID`. Throws `eventNotFound`.
    public func event(channelID: String, eventID: String) throws -> EventRecord {
        try read { c in
            guard let e = try Self.loadEvent(c, id: eventID), e.channelID == channelID else {
                throw StoreError.eventNotFound(eventID)
            }
            return e
        }
    }

    public func event(id: String) throws -> EventRecord? {
        try read { c in try Self.loadEvent(c, id: id) }
    }

    /// The newest event of a channel.
    public func lastEvent(channelNum: Int64) throws -> EventRecord? {
        try read { c in
            let s = try c.cached(
                "SELECT \(Self.eventColumns) FROM \(Self.eventsJoined) WHERE e.channel = ? ORDER BY e.seq DESC LIMIT 1")
            try s.bind(1, int64: channelNum)
            defer { s.reset() }
            return try s.step() ? Self.event(from: s) : nil
        }
    }

    /// Queued and sending events, by channel then sequence (what the scheduler resumes
    /// after a restart).
    public func unfinishedEvents() throws -> [EventRecord] {
        try read { c in
            var out: [EventRecord] = []
            try c.forEachRow(
                """
                SELECT \(Self.eventColumns) FROM \(Self.eventsJoined)
                WHERE e.state IN (\(EventState.unfinished.sqlList)) ORDER BY e.channel, e.seq
                """
            ) { s in
                out.append(Self.event(from: s))
                return true
            }
            return out
        }
    }

    /// The highest sequence number of a channel's finished events below its lowest
    /// unfinished one (0 if none).
    public func lastFinishedSeq(channelNum: Int64) throws -> Int64 {
        try read { c in
            let s = try c.cached(
                """
                SELECT MAX(seq) FROM events WHERE channel = ?1 AND state IN (\(EventState.finished.sqlList))
                  AND seq < COALESCE((SELECT MIN(seq) FROM events WHERE channel = ?1 AND state IN (\(EventState.unfinished.sqlList))),
                                     9223372036854775807)
                """)
            try s.bind(1, int64: channelNum)
            defer { s.reset() }
            return try s.step() ? s.int64(0) : 0
        }
    }

    /// A channel's queued and sending events with `afterSeq < seq <= throughSeq`, in
    /// sequence order: what the scheduler takes when told of the event `throughSeq`
    /// (notifications can arrive out of order; events commit in sequence order).
    public func unfinishedEvents(channelNum: Int64, afterSeq: Int64, throughSeq: Int64) throws -> [EventRecord] {
        try read { c in
            let s = try c.cached(
                """
                SELECT \(Self.eventColumns) FROM \(Self.eventsJoined)
                WHERE e.channel = ? AND e.seq > ? AND e.seq <= ? AND e.state IN (\(EventState.unfinished.sqlList)) ORDER BY e.seq
                """)
            try s.bind(1, int64: channelNum)
            try s.bind(2, int64: afterSeq)
            try s.bind(3, int64: throughSeq)
            defer { s.reset() }
            var out: [EventRecord] = []
            while try s.step() { out.append(Self.event(from: s)) }
            return out
        }
    }

    /// Marks an event `sending` with its targets and where its pass starts.
    public func markSending(eventID: String, targets: Int64, passStart: [UInt8], priority: Int) throws {
        try write(Self.markSendingJob(eventID: eventID, targets: targets, passStart: passStart, priority: priority, now: clock.nowMillis()))
    }

    /// As `markSending`, but queued: returns at once, `completion` runs on the writer thread
    /// once it committed (nil) or failed. Writes are applied in the order they are queued, so
    /// a later checkpoint or finish of the event never lands before it.
    public func markSending(
        eventID: String, targets: Int64, passStart: [UInt8], priority: Int, completion: @escaping @Sendable (Error?) -> Void
    ) {
        queue(
            Self.markSendingJob(eventID: eventID, targets: targets, passStart: passStart, priority: priority, now: clock.nowMillis()),
            completion)
    }

    static func markSendingJob(eventID: String, targets: Int64, passStart: [UInt8], priority: Int, now: Int64)
        -> @Sendable (SQLiteConnection) throws -> Void
    {
        { c in
            _ = try c.run(
                """
                UPDATE events SET state = '\(EventState.sending.rawValue)', started_at_ms = COALESCE(started_at_ms, ?), targets = ?,
                    pass_start = ?, cursor = COALESCE(cursor, ?), priority = ? WHERE id = ?
                """, [.integer(now), .integer(targets), .blob(passStart), .blob(passStart), .integer(Int64(priority)), .text(eventID)])
        }
    }

    /// Queues `body` on the writer; `completion` gets nil once committed, or the error.
    func queue(_ body: @escaping @Sendable (SQLiteConnection) throws -> Void, _ completion: @escaping @Sendable (Error?) -> Void) {
        do {
            try db.write(
                body,
                completion: { r in
                    if case .failure(let e) = r { completion(e) } else { completion(nil) }
                })
        } catch {
            completion(error)
        }
    }

    /// Records progress: everything up to `cursor` (in pass order) is finished.
    /// Non-blocking: the write is queued; `completion` runs on the writer thread.
    public func checkpoint(
        eventID: String, cursor: [UInt8], wrapped: Bool, counters: EventCounters,
        completion: @escaping @Sendable (Error?) -> Void = { _ in }
    ) {
        do {
            try db.write(
                { c in
                    _ = try c.run(
                        """
                        UPDATE events SET cursor = ?, wrapped = ?, sent = ?, failed = ?, pruned = ?, retried = ?, skipped = ?
                        WHERE id = ? AND state = '\(EventState.sending.rawValue)'
                        """,
                        [
                            .blob(cursor), .integer(wrapped ? 1 : 0), .integer(counters.sent), .integer(counters.failed),
                            .integer(counters.pruned), .integer(counters.retried), .integer(counters.skipped), .text(eventID),
                        ])
                },
                completion: { r in
                    if case .failure(let e) = r { completion(e) } else { completion(nil) }
                })
        } catch {
            completion(error)
        }
    }

    /// Ends an event: `done`, `superseded` (by `supersededBy`) or `failed` (with `reason`).
    public func finishEvent(
        eventID: String, state: EventState, counters: EventCounters, reason: String? = nil, supersededBy: String? = nil
    ) throws {
        try write(
            Self.finishJob(
                eventID: eventID, state: state, counters: counters, reason: reason, supersededBy: supersededBy, now: clock.nowMillis()))
    }

    /// As `finishEvent`, but queued (the scheduler must not wait for a commit per event):
    /// returns at once; `completion` runs on the writer thread with nil once committed, or
    /// the error. Applied in queue order after the event's earlier writes.
    public func finishEvent(
        eventID: String, state: EventState, counters: EventCounters, reason: String?, supersededBy: String?,
        completion: @escaping @Sendable (Error?) -> Void
    ) {
        queue(
            Self.finishJob(
                eventID: eventID, state: state, counters: counters, reason: reason, supersededBy: supersededBy, now: clock.nowMillis()),
            completion)
    }

    static func finishJob(
        eventID: String, state: EventState, counters: EventCounters, reason: String?, supersededBy: String?, now: Int64
    ) -> @Sendable (SQLiteConnection) throws -> Void {
        { c in
            _ = try c.run(
                """
                UPDATE events SET state = ?, finished_at_ms = ?, failure_reason = ?, superseded_by = ?,
                    started_at_ms = COALESCE(started_at_ms, ?), targets = MAX(targets, ?), sent = ?, failed = ?,
                    pruned = ?, retried = ?, skipped = ?
                WHERE id = ? AND state IN (\(EventState.unfinished.sqlList))
                """,
                [
                    .text(state.rawValue), .integer(now), reason.map { .text($0) } ?? .null, supersededBy.map { .text($0) } ?? .null,
                    .integer(now), .integer(counters.targets), .integer(counters.sent), .integer(counters.failed),
                    .integer(counters.pruned), .integer(counters.retried), .integer(counters.skipped), .text(eventID),
                ])
        }
    }

    /// Records the outcome of an event's broadcast request.
    public func setBroadcastState(eventID: String, state: BroadcastState, reason: String?) throws {
        try write { c in
            _ = try c.run(
                "UPDATE events SET broadcast_state = ?, broadcast_reason = ? WHERE id = ?",
                [.text(state.rawValue), reason.map { .text($0) } ?? .null, .text(eventID)])
        }
    }

    /// Deletes finished events older than `olderThanMillis` (keeping each channel's current
    /// event, which late joiners need) and forgets idempotency keys past their window.
    public func sweepEvents(olderThanMillis: Int64) throws -> Int {
        let now = clock.nowMillis()
        return try write { c in
            try c.run(
                "UPDATE events SET idempotency_key = NULL WHERE idempotency_key IS NOT NULL AND created_at_ms < ?",
                [.integer(now - Self.idempotencyWindowMillis)])
            return try c.run(
                """
                DELETE FROM events WHERE state IN (\(EventState.finished.sqlList)) AND created_at_ms < ?
                  AND id NOT IN (SELECT current_event FROM channels WHERE current_event IS NOT NULL)
                """, [.integer(now - olderThanMillis)])
        }
    }
}

extension Store {
    /// The event an `Idempotency-Key` already names on an open channel (nil: none, or no key).
    static func keyedEvent(_ c: SQLiteConnection, channel ch: Channel, key: String?) throws -> PublishRule.KeyedEvent? {
        guard let key, ch.isOpen else { return nil }
        let s = try c.cached("SELECT e.id, e.created_at_ms FROM events e WHERE e.channel = ? AND e.idempotency_key = ?")
        defer { s.reset() }
        try s.bind(1, int64: ch.num)
        try s.bind(2, text: key)
        return try s.step() ? PublishRule.KeyedEvent(id: s.text(0), createdAtMillis: s.int64(1)) : nil
    }

    /// How many subscriptions a dry run of `event` would target (a start: the push-to-start
    /// tokens; otherwise the activity tokens, none on a broadcast-only channel).
    static func dryRunTargets(_ c: SQLiteConnection, channel ch: Channel, event: LiveActivityEvent, nowSeconds: Int64) throws -> Int64 {
        guard ch.mode.usesTokens || event.kind == .start else { return 0 }
        let kind: SubscriptionKind = event.kind == .start ? .pushToStart : .activity
        return try c.queryValue(
            "SELECT COUNT(*) FROM subscriptions WHERE channel = ? AND kind = ? AND (expires_at IS NULL OR expires_at > ?)",
            [.integer(ch.num), .integer(kind.code), .integer(nowSeconds)])?.int64Value ?? 0
    }
}
