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
    /// How far ahead of the server's clock a publisher's `aps.timestamp` may be (a clock
    /// that far off would poison the channel's ordering: every later event would be stale).
    public static let maxTimestampSkew: Int64 = 600
    /// An `Idempotency-Key` is remembered this long.
    public static let idempotencyWindowMillis: Int64 = 24 * 3600 * 1000

    static let eventColumns = """
        e.id, e.channel, c.id, e.seq, e.kind, e.aps_timestamp, e.payload, e.priority, e.expiration, e.state,
        e.failure_reason, e.superseded_by, e.created_at_ms, e.started_at_ms, e.finished_at_ms, e.targets, e.sent,
        e.failed, e.pruned, e.retried, e.skipped, e.pass_start, e.cursor, e.wrapped, e.broadcast_state, e.broadcast_reason
        """

    static func event(from s: Statement) -> EventRecord {
        var counters = EventCounters()
        counters.targets = s.int64(15)
        counters.sent = s.int64(16)
        counters.failed = s.int64(17)
        counters.pruned = s.int64(18)
        counters.retried = s.int64(19)
        counters.skipped = s.int64(20)
        return EventRecord(
            id: s.text(0), channelNum: s.int64(1), channelID: s.text(2), seq: s.int64(3),
            kind: LiveActivityEventKind(rawValue: s.text(4)) ?? .update, apsTimestamp: s.int64(5), payload: s.blob(6),
            priority: s.int(7), expiration: s.isNull(8) ? nil : s.int64(8), state: EventState(rawValue: s.text(9)) ?? .failed,
            failureReason: s.isNull(10) ? nil : s.text(10), supersededBy: s.isNull(11) ? nil : s.text(11),
            createdAtMillis: s.int64(12), startedAtMillis: s.isNull(13) ? nil : s.int64(13),
            finishedAtMillis: s.isNull(14) ? nil : s.int64(14), counters: counters,
            passStart: s.isNull(21) ? nil : s.blob(21), cursor: s.isNull(22) ? nil : s.blob(22), wrapped: s.int64(23) != 0,
            broadcastState: s.text(24), broadcastReason: s.isNull(25) ? nil : s.text(25))
    }

    static func loadEvent(_ c: SQLiteConnection, id: String) throws -> EventRecord? {
        let s = try c.cached("SELECT \(eventColumns) FROM events e JOIN channels c ON c.num = e.channel WHERE e.id = ?")
        try s.bind(1, text: id)
        return try s.step() ? event(from: s) : nil
    }

    /// The payload limit of an event on a channel (reference §0): 5120 when the event goes
    /// only to a broadcast channel, else 4096 (a token push must fit; hybrid sends both).
    public static func payloadLimit(mode: ChannelMode, kind: LiveActivityEventKind) -> Int {
        mode == .broadcast && kind != .start ? PayloadLimits.broadcast : PayloadLimits.token
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
            let ch = try Self.openChannel(c, channelID)
            if let key = idempotencyKey, !dryRun {
                let s = try c.cached(
                    "SELECT e.id, e.created_at_ms FROM events e WHERE e.channel = ? AND e.idempotency_key = ?")
                try s.bind(1, int64: ch.num)
                try s.bind(2, text: key)
                if try s.step() {
                    let id = s.text(0)
                    let created = s.int64(1)
                    s.reset()
                    if nowMs - created < Self.idempotencyWindowMillis {
                        let e = try Self.loadEvent(c, id: id)!
                        return PublishResult(event: e, created: false, targets: 0, limit: 0, channel: ch)
                    }
                    try c.run("UPDATE events SET idempotency_key = NULL WHERE id = ?", [.text(id)])
                }
            }
            if event.kind == .update && ch.lifecycle == "ended" { throw StoreError.activityEnded(channelID) }
            let ts: Int64
            if let given = event.timestamp {
                guard given > ch.lastTimestamp else { throw StoreError.staleTimestamp(given: given, last: ch.lastTimestamp) }
                guard given <= now + Self.maxTimestampSkew else {
                    throw StoreError.futureTimestamp(given: given, limit: Self.maxTimestampSkew)
                }
                ts = given
            } else {
                ts = max(now, ch.lastTimestamp + 1)
            }
            let payload = event.render(timestamp: ts)
            let limit = Self.payloadLimit(mode: ch.mode, kind: event.kind)
            if payload.count > limit {
                throw StoreError.payloadTooLarge(size: payload.count, limit: limit, broadcast: limit == PayloadLimits.broadcast)
            }
            let seq = ch.lastSeq + 1
            let broadcast = ch.mode.usesBroadcast && event.kind != .start
            var record = EventRecord(
                id: Self.newID("evt_"), channelNum: ch.num, channelID: ch.id, seq: seq, kind: event.kind, apsTimestamp: ts,
                payload: payload, priority: event.effectivePriority, expiration: event.expiration, state: .queued,
                failureReason: nil, supersededBy: nil, createdAtMillis: nowMs, startedAtMillis: nil, finishedAtMillis: nil,
                counters: EventCounters(), passStart: nil, cursor: nil, wrapped: false,
                broadcastState: broadcast ? "pending" : "none", broadcastReason: nil)
            if dryRun {
                let kind: SubscriptionKind = event.kind == .start ? .pushToStart : .activity
                let n = ch.mode.usesTokens || event.kind == .start
                    ? (try c.queryValue(
                        "SELECT COUNT(*) FROM subscriptions WHERE channel = ? AND kind = ? AND (expires_at IS NULL OR expires_at > ?)",
                        [.integer(ch.num), .integer(kind.code), .integer(now)])?.int64Value ?? 0) : 0
                record.counters.targets = n
                return PublishResult(event: record, created: true, targets: n, limit: limit, channel: ch)
            }
            try c.run(
                """
                INSERT INTO events (id, channel, seq, kind, aps_timestamp, payload, priority, expiration, state,
                                    idempotency_key, created_at_ms, broadcast_state)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'queued', ?, ?, ?)
                """,
                [.text(record.id), .integer(ch.num), .integer(seq), .text(event.kind.rawValue), .integer(ts), .blob(payload),
                 .integer(Int64(record.priority)), event.expiration.map { .integer($0) } ?? .null,
                 idempotencyKey.map { .text($0) } ?? .null, .integer(nowMs), .text(record.broadcastState)])
            let lifecycle: String
            let current: SQLValue
            switch event.kind {
            case .start: (lifecycle, current) = ("started", .null)
            case .update: (lifecycle, current) = (ch.lifecycle == "idle" ? "idle" : ch.lifecycle, .text(record.id))
            case .end: (lifecycle, current) = ("ended", .text(record.id))
            }
            try c.run(
                "UPDATE channels SET last_seq = ?, last_timestamp = ?, lifecycle = ?, current_event = ? WHERE num = ?",
                [.integer(seq), .integer(ts), .text(lifecycle), current, .integer(ch.num)])
            return PublishResult(event: record, created: true, targets: 0, limit: limit, channel: ch)
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
                "SELECT \(Self.eventColumns) FROM events e JOIN channels c ON c.num = e.channel WHERE e.channel = ? ORDER BY e.seq DESC LIMIT 1")
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
                SELECT \(Self.eventColumns) FROM events e JOIN channels c ON c.num = e.channel
                WHERE e.state IN ('queued', 'sending') ORDER BY e.channel, e.seq
                """
            ) { s in
                out.append(Self.event(from: s))
                return true
            }
            return out
        }
    }

    /// The highest sequence number of a channel's finished events (0 if none).
    public func lastFinishedSeq(channelNum: Int64) throws -> Int64 {
        try read { c in
            let s = try c.cached("SELECT MAX(seq) FROM events WHERE channel = ? AND state NOT IN ('queued', 'sending')")
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
                SELECT \(Self.eventColumns) FROM events e JOIN channels c ON c.num = e.channel
                WHERE e.channel = ? AND e.seq > ? AND e.seq <= ? AND e.state IN ('queued', 'sending') ORDER BY e.seq
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
        queue(Self.markSendingJob(eventID: eventID, targets: targets, passStart: passStart, priority: priority, now: clock.nowMillis()), completion)
    }

    static func markSendingJob(eventID: String, targets: Int64, passStart: [UInt8], priority: Int, now: Int64) -> @Sendable (SQLiteConnection) throws -> Void {
        { c in
            _ = try c.run(
                """
                UPDATE events SET state = 'sending', started_at_ms = COALESCE(started_at_ms, ?), targets = ?,
                    pass_start = ?, cursor = COALESCE(cursor, ?), priority = ? WHERE id = ?
                """, [.integer(now), .integer(targets), .blob(passStart), .blob(passStart), .integer(Int64(priority)), .text(eventID)])
        }
    }

    /// Queues `body` on the writer; `completion` gets nil once committed, or the error.
    func queue(_ body: @escaping @Sendable (SQLiteConnection) throws -> Void, _ completion: @escaping @Sendable (Error?) -> Void) {
        do {
            try db.write(body, completion: { r in
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
            try db.write({ c in
                _ = try c.run(
                    """
                    UPDATE events SET cursor = ?, wrapped = ?, sent = ?, failed = ?, pruned = ?, retried = ?, skipped = ?
                    WHERE id = ? AND state = 'sending'
                    """,
                    [.blob(cursor), .integer(wrapped ? 1 : 0), .integer(counters.sent), .integer(counters.failed),
                     .integer(counters.pruned), .integer(counters.retried), .integer(counters.skipped), .text(eventID)])
            }, completion: { r in
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
                WHERE id = ? AND state IN ('queued', 'sending')
                """,
                [.text(state.rawValue), .integer(now), reason.map { .text($0) } ?? .null, supersededBy.map { .text($0) } ?? .null,
                 .integer(now), .integer(counters.targets), .integer(counters.sent), .integer(counters.failed),
                 .integer(counters.pruned), .integer(counters.retried), .integer(counters.skipped), .text(eventID)])
        }
    }

    /// Records the outcome of an event's broadcast request.
    public func setBroadcastState(eventID: String, state: String, reason: String?) throws {
        try write { c in
            _ = try c.run(
                "UPDATE events SET broadcast_state = ?, broadcast_reason = ? WHERE id = ?",
                [.text(state), reason.map { .text($0) } ?? .null, .text(eventID)])
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
                DELETE FROM events WHERE state IN ('done', 'superseded', 'failed') AND created_at_ms < ?
                  AND id NOT IN (SELECT current_event FROM channels WHERE current_event IS NOT NULL)
                """, [.integer(now - olderThanMillis)])
        }
    }
}
