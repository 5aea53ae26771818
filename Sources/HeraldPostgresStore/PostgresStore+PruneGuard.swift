import HeraldPostgres
import HeraldStore

/// The pruning guard across workers: each holding's tally is on its checkpoint rows
/// (`answers`, `invalid`, written with its counters by the fenced checkpoints and final
/// states), and a trip is `events.prune_guard_tripped`.
extension PostgresStore: PruneGuardStorage {
    public func pruneGuardTally(eventID: String, excluding shards: ShardSet) throws -> PruneGuardTally? {
        let row = try read { c in
            try c.query(
                """
                SELECT e.prune_guard_tripped AS tripped, ch.shard_count,
                    (SELECT count(*) FROM checkpoints k WHERE k.event_id = e.id) AS started,
                    (SELECT COALESCE(sum(k.answers), 0)::int8 FROM checkpoints k
                     WHERE k.event_id = e.id AND NOT (k.shard = ANY($2::int8[]))) AS answers,
                    (SELECT COALESCE(sum(k.invalid), 0)::int8 FROM checkpoints k
                     WHERE k.event_id = e.id AND NOT (k.shard = ANY($2::int8[]))) AS invalid
                FROM events e JOIN channels ch ON ch.num = e.channel WHERE e.id = $1
                """, [.text(eventID), .array(shards.members.map { .int($0) })]
            ).first
        }
        // The event is gone (swept, or its channel deleted): nothing to delete for it.
        guard let row else { return PruneGuardTally(tripped: true, startedShards: 0, shardCount: 0) }
        return PruneGuardTally(
            answers: try row.int64("answers"), invalid: try row.int64("invalid"), tripped: try row.bool("tripped"),
            startedShards: Int(try row.int64("started")), shardCount: Int(try row.int64("shard_count")))
    }

    public func recordPruneGuardTrip(eventID: String) throws -> Bool {
        try write { c in
            // The row lock orders two trips at once: the second finds it set.
            try c.run("UPDATE events SET prune_guard_tripped = true WHERE id = $1 AND NOT prune_guard_tripped", [.text(eventID)]) == 1
        }
    }
}
