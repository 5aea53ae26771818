-- Herald's PostgreSQL schema, version 2: what the storage protocols on PostgreSQL
-- (Sources/HeraldPostgresStore) need beyond version 1.

-- A token's shard is `Shards.shard(of:)` (Sources/HeraldStore/Shards.swift, the same
-- FNV-1a 64-bit as ShardHash), mod `Shards.count`, which the store writes as each
-- channel's `shard_count`.

-- Subscriptions keyed as on SQLite, (channel, kind, token): a fan-out pass reads a
-- channel's tokens in token order across the shards its lease holds (one index range,
-- the shard a filter), a registration upserts on it, and an unregistration finds a token
-- without its kind. `shard` stays a column (a function of the token), so the key is as
-- unique as before; one index instead of two keeps bulk registration fast.
ALTER TABLE subscriptions DROP CONSTRAINT subscriptions_pkey;
ALTER TABLE subscriptions ADD PRIMARY KEY (channel, kind, token);
-- The expiry sweep.
CREATE INDEX subscriptions_expiry ON subscriptions (expires_at) WHERE expires_at IS NOT NULL;

-- Progress of an event per (event, shard): the targets of the shards a pass covers are
-- kept with the row of the lowest shard of its lease, as are its counters, so the event's
-- figures are the sums over its rows.
ALTER TABLE checkpoints ADD COLUMN targets bigint NOT NULL DEFAULT 0;

-- Events of a channel by sequence (late joiners, resumption) use UNIQUE (channel, seq).
