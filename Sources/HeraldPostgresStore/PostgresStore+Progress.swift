import HeraldPostgres
import HeraldStore

/// Progress per (event, shard) in `checkpoints`, every write fenced by the lease
/// (`fence`). A write's counters and targets are the whole pass's (the pass covers the
/// lease's shards): they are kept on the row of the lowest shard written, 0 on the others,
/// so an event's figures are the sums over its rows.
extension PostgresStore {
    public func markSending(
        eventID: String, shards: ShardSet, targets: Int64, passStart: [UInt8], priority: Int,
        completion: @escaping @Sendable (Error?) -> Void
    ) {
        let now = clock.nowMillis()
        queue(
            { [self] c in
                let mine = try fence(c, eventID: eventID, shards: shards)
                guard let anchor = mine.first else { return }
                try c.run(
                    """
                    UPDATE events SET state = $2, started_at_ms = COALESCE(started_at_ms, $3), priority = $4
                    WHERE id = $1 AND state = ANY($5::text[])
                    """,
                    [.text(eventID), .text(EventState.sending.rawValue), .int8(now), .int(priority), EventState.unfinished.parameter])
                try c.run(
                    """
                    INSERT INTO checkpoints (event_id, shard, pass_start, cursor, targets)
                    SELECT $1, s, $2, $2, CASE WHEN s = $3 THEN $4 ELSE 0 END FROM unnest($5::int8[]) AS s
                    ON CONFLICT (event_id, shard) DO UPDATE
                    SET pass_start = EXCLUDED.pass_start, cursor = COALESCE(checkpoints.cursor, EXCLUDED.cursor),
                        targets = EXCLUDED.targets
                    WHERE NOT checkpoints.done
                    """, [.text(eventID), .bytea(passStart), .int8(anchor), .int8(targets), .array(mine.map { .int8($0) })])
            }, completion)
    }

    public func checkpoint(
        eventID: String, shards: ShardSet, cursor: [UInt8], wrapped: Bool, counters: EventCounters,
        completion: @escaping @Sendable (Error?) -> Void
    ) {
        queue(
            { [self] c in
                let mine = try fence(c, eventID: eventID, shards: shards)
                guard let anchor = mine.first else { return }
                try c.run(
                    """
                    INSERT INTO checkpoints (event_id, shard, cursor, wrapped, sent, failed, pruned, retried, skipped, answers, invalid)
                    SELECT $1, s, $2, $3, a * $5, a * $6, a * $7, a * $8, a * $9, a * $12, a * $13
                    FROM unnest($10::int8[]) AS s, LATERAL (SELECT CASE WHEN s = $4 THEN 1 ELSE 0 END::int8 AS a) AS w
                    WHERE EXISTS (SELECT 1 FROM events WHERE id = $1 AND state = $11)
                    ON CONFLICT (event_id, shard) DO UPDATE
                    SET cursor = EXCLUDED.cursor, wrapped = EXCLUDED.wrapped, sent = EXCLUDED.sent, failed = EXCLUDED.failed,
                        pruned = EXCLUDED.pruned, retried = EXCLUDED.retried, skipped = EXCLUDED.skipped,
                        answers = EXCLUDED.answers, invalid = EXCLUDED.invalid
                    WHERE NOT checkpoints.done
                    """,
                    [
                        .text(eventID), .bytea(cursor), .bool(wrapped), .int8(anchor), .int8(counters.sent), .int8(counters.failed),
                        .int8(counters.pruned), .int8(counters.retried), .int8(counters.skipped), .array(mine.map { .int8($0) }),
                        .text(EventState.sending.rawValue), .int8(counters.answers), .int8(counters.invalid),
                    ])
            }, completion)
    }

    public func finishEvent(
        eventID: String, shards: ShardSet, state: EventState, counters: EventCounters, reason: String?, supersededBy: String?,
        completion: @escaping @Sendable (Error?) -> Void
    ) {
        let now = clock.nowMillis()
        queue(
            { [self] c in
                try finish(
                    c, eventID: eventID, shards: shards, state: state, counters: counters, reason: reason,
                    supersededBy: supersededBy, now: now)
            }, completion)
    }

    public func finishEvent(
        eventID: String, shards: ShardSet, state: EventState, counters: EventCounters, reason: String?, supersededBy: String?
    ) throws {
        let now = clock.nowMillis()
        try write { c in
            try finish(
                c, eventID: eventID, shards: shards, state: state, counters: counters, reason: reason,
                supersededBy: supersededBy, now: now)
        }
    }

    /// Marks the held shards of `shards` finished for the event. `done` ends the event once
    /// every shard of its channel is; `superseded` and `failed` end it at once (a newer
    /// event, or a stop, concerns every shard). An event already finished stays as it is.
    func finish(
        _ c: PostgresConnection, eventID: String, shards: ShardSet, state: EventState, counters: EventCounters,
        reason: String?, supersededBy: String?, now: Int64
    ) throws {
        let mine = try fence(c, eventID: eventID, shards: shards)
        guard let anchor = mine.first else { return }
        // Finishes of one event take turns on its row: the count of done shards below must
        // see every finish committed before it. Without the lock two holders finishing at
        // once each missed the other's uncommitted rows, and the event stayed unfinished.
        try c.run("SELECT 1 FROM events WHERE id = $1 FOR UPDATE", [.text(eventID)])
        try c.run(
            """
            INSERT INTO checkpoints (event_id, shard, done, targets, sent, failed, pruned, retried, skipped, answers, invalid)
            SELECT $1, s, true, a * $3, a * $4, a * $5, a * $6, a * $7, a * $8, a * $11, a * $12
            FROM unnest($9::int8[]) AS s, LATERAL (SELECT CASE WHEN s = $2 THEN 1 ELSE 0 END::int8 AS a) AS w
            WHERE EXISTS (SELECT 1 FROM events WHERE id = $1 AND state = ANY($10::text[]))
            ON CONFLICT (event_id, shard) DO UPDATE
            SET done = true, targets = GREATEST(checkpoints.targets, EXCLUDED.targets), sent = EXCLUDED.sent,
                failed = EXCLUDED.failed, pruned = EXCLUDED.pruned, retried = EXCLUDED.retried, skipped = EXCLUDED.skipped,
                answers = EXCLUDED.answers, invalid = EXCLUDED.invalid
            WHERE NOT checkpoints.done
            """,
            [
                .text(eventID), .int8(anchor), .int8(counters.targets), .int8(counters.sent), .int8(counters.failed),
                .int8(counters.pruned), .int8(counters.retried), .int8(counters.skipped), .array(mine.map { .int8($0) }),
                EventState.unfinished.parameter, .int8(counters.answers), .int8(counters.invalid),
            ])
        try c.run(
            """
            UPDATE events SET state = $2, finished_at_ms = $3, failure_reason = $4, superseded_by = $5,
                started_at_ms = COALESCE(started_at_ms, $3)
            WHERE id = $1 AND state = ANY($6::text[])
              AND ($2 <> $7 OR (SELECT count(*) FROM checkpoints k WHERE k.event_id = $1 AND k.done)
                               >= (SELECT shard_count FROM channels WHERE num = events.channel))
            """,
            [
                .text(eventID), .text(state.rawValue), .int8(now), reason.parameter, supersededBy.parameter,
                EventState.unfinished.parameter, .text(EventState.done.rawValue),
            ])
    }
}
