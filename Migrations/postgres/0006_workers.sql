-- Herald's PostgreSQL schema, version 6: the workers alive, so that each claims its share
-- of a channel's shards (Sources/HeraldPostgresStore/PostgresStore+Workers.swift).

-- One row per running `herald serve` (its worker id, new on every start), kept alive by
-- the fan-out's poll and lease claims; `expires_at` is by the database's clock. A worker
-- claims at most ceil(shard_count / live workers) shards of a channel.
CREATE TABLE workers (
    id         text PRIMARY KEY,
    expires_at timestamptz NOT NULL
);
-- Small and rewritten every second by every worker: vacuum it often.
ALTER TABLE workers SET (autovacuum_vacuum_scale_factor = 0.0, autovacuum_vacuum_threshold = 100);
