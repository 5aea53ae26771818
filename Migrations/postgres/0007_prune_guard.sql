-- Herald's PostgreSQL schema, version 7: the pruning guard counts per event across the
-- workers (Sources/HeraldPostgresStore/PostgresStore+PruneGuard.swift).

-- The guard's tally of a holding's pass (final answers, and those that called the token
-- invalid), kept with its counters on the row of the lowest shard of its lease and written
-- by the same fenced checkpoints and final states, so an event's tally is the sum over
-- its rows.
ALTER TABLE checkpoints ADD COLUMN answers bigint NOT NULL DEFAULT 0;
ALTER TABLE checkpoints ADD COLUMN invalid bigint NOT NULL DEFAULT 0;

-- Some worker's guard tripped for this event: every other worker stops deleting at its
-- next decision.
ALTER TABLE events ADD COLUMN prune_guard_tripped boolean NOT NULL DEFAULT false;
