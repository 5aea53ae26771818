-- Herald's PostgreSQL schema, version 9: subscriptions keyed (channel, kind, shard, token),
-- so that a fan-out pass of a lease reads only its own shards' rows.
--
-- Until version 8 the key was (channel, kind, token) and `shard` a filter: a worker holding
-- 16 of 48 shards read every row of the channel's key range and threw two thirds away, so
-- with three workers every row was read three times (docs/performance.md). With the shard
-- second to last, a lease's shards are separate ranges of the key; the scan
-- (Sources/HeraldPostgresStore/PostgresScanner.swift) merges them in token order, one index
-- range per shard (a MERGE APPEND of index scans, each stopping once the merge has what it
-- asked for). `shard` is a function of the token (`Shards.shard(of:)`), so the key is as
-- unique as (channel, kind, token) was, and every statement that finds a subscription by
-- its token gives its shard too (computed in Swift).
--
-- The registration time and the expiry are carried in the key's index (INCLUDE): on pages
-- the visibility map marks all-visible (after a vacuum: autovacuum runs after a large
-- import) the scan is an index-only scan and reads no table page.
--
-- Apply it with every `herald serve` stopped: an older binary's upserts name the old key
-- (ON CONFLICT (channel, kind, token)) and would fail. The migration refuses while a worker
-- is alive (its row in `workers` not expired). It rebuilds the key's index; the table's
-- rows stay where they are.

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM workers WHERE expires_at > clock_timestamp()) THEN
        RAISE EXCEPTION 'herald serve is running against this database (table workers): stop every worker, then run herald migrate again (migration 9 changes the key of subscriptions)';
    END IF;
END $$;

ALTER TABLE subscriptions DROP CONSTRAINT subscriptions_pkey;
ALTER TABLE subscriptions ADD PRIMARY KEY (channel, kind, shard, token) INCLUDE (registered_at_ms, expires_at);
