-- Herald's PostgreSQL schema, version 8: 48 shards per channel instead of 16, so that 2, 3,
-- 4, 6, 8, 12, 16 or 24 workers each hold an equal share of a channel (with 16, three
-- workers split a channel 6/6/4 and the fan-out takes as long as the largest part: at most
-- 2.67 × one worker's rate instead of 3). `Shards.count` (Sources/HeraldStore/Shards.swift)
-- is 48 from this version on.
--
-- Every subscription moves to shard FNV-1a(token) mod 48 (computed here, the function
-- `Shards.shard(of:)` is); since 48 = 3 × 16, the new shard of a token is its old shard s,
-- s + 16 or s + 32. So an unfinished event's checkpoint of old shard s holds for the three
-- shards it became: the row is copied to s + 16 and s + 32 at the same place (cursor, pass
-- start, wrapped, done), counters 0 on the copies, so the event's sums are unchanged and it
-- resumes where it was. Lease rows 16-47 are added and every lease is freed.
--
-- Apply it with every `herald serve` stopped: a worker running the older binary would keep
-- claiming 16 shards and miss the tokens moved to the others. The migration refuses while a
-- worker is alive (its row in `workers` not expired). It rewrites every subscription row:
-- 51 s for a million on the 2-core benchmark machine, busy (docs/operations.md).

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM workers WHERE expires_at > clock_timestamp()) THEN
        RAISE EXCEPTION 'herald serve is running against this database (table workers): stop every worker, then run herald migrate again (migration 8 moves subscriptions between shards)';
    END IF;
END $$;

-- FNV-1a, 64 bit, of `b` as a numeric in [0, 2^64): the arithmetic of Shards.shard(of:)
-- on two 32-bit halves (bigint has no wrapping multiply; the prime is 2^40 + 435, so
-- h * prime mod 2^64 = h * 435 + (h << 40) mod 2^64). Temporary: gone with the session.
CREATE FUNCTION pg_temp.herald_fnv1a(b bytea) RETURNS numeric
LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
    hi bigint := 3421674724; -- 0xcbf29ce4, the offset basis's upper half
    lo bigint := 2216829733; -- 0x84222325, its lower half
    t bigint;
BEGIN
    FOR i IN 0 .. length(b) - 1 LOOP
        lo := lo # get_byte(b, i);
        t := lo * 435;
        hi := (hi * 435 + (t >> 32) + (lo << 8)) & 4294967295;
        lo := t & 4294967295;
    END LOOP;
    RETURN hi::numeric * 4294967296 + lo;
END $$;

UPDATE subscriptions SET shard = (pg_temp.herald_fnv1a(token) % 48)::bigint;

INSERT INTO checkpoints (event_id, shard, cursor, pass_start, wrapped, done)
SELECT c.event_id, c.shard + k.d, c.cursor, c.pass_start, c.wrapped, c.done
FROM checkpoints AS c CROSS JOIN (VALUES (16), (32)) AS k(d)
WHERE c.shard < 16
ON CONFLICT (event_id, shard) DO NOTHING;

INSERT INTO leases (channel, shard) SELECT ch.num, s FROM channels AS ch, generate_series(16, 47) AS s ON CONFLICT DO NOTHING;
UPDATE leases SET owner = NULL, expires_at = '-infinity';

ALTER TABLE channels ALTER COLUMN shard_count SET DEFAULT 48;
UPDATE channels SET shard_count = 48;
