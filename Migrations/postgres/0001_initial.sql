-- Herald's PostgreSQL schema, version 1: the tables of Migrations/0001_initial.sql in
-- PostgreSQL types, with subscriptions split into shards and checkpoints per (event,
-- shard), plus the shard leases of several workers. Applied in one transaction by
-- `PostgresConnection.migrate`. The API does not use it yet (docs/postgres.md).

CREATE TABLE channels (
    num             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id              text NOT NULL UNIQUE,
    bundle_id       text NOT NULL,
    mode            text NOT NULL CHECK (mode IN ('fanout', 'broadcast', 'hybrid')),
    environment     text NOT NULL CHECK (environment IN ('sandbox', 'production')),
    storage_policy  text NOT NULL CHECK (storage_policy IN ('none', 'most-recent')),
    apns_channel_id text,
    state           text NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'closed')),
    lifecycle       text NOT NULL DEFAULT 'idle' CHECK (lifecycle IN ('idle', 'started', 'ended')),
    last_seq        bigint NOT NULL DEFAULT 0,
    last_timestamp  bigint NOT NULL DEFAULT 0,
    current_event   text,
    catch_up        boolean NOT NULL DEFAULT true,
    min_interval_ms bigint NOT NULL DEFAULT 0,
    p10_budget_per_hour bigint NOT NULL DEFAULT 0,
    -- Fixed when the channel is made: a token's shard is ShardHash(token) mod shard_count.
    shard_count     bigint NOT NULL DEFAULT 16 CHECK (shard_count BETWEEN 1 AND 1024),
    created_at_ms   bigint NOT NULL,
    closed_at_ms    bigint
);

-- One token per row. The primary key orders a shard's tokens for the fan-out scan, as
-- (channel, kind, token) does on SQLite; bytea tokens, 32 bytes for APNs.
CREATE TABLE subscriptions (
    channel          bigint NOT NULL,
    shard            bigint NOT NULL,
    kind             bigint NOT NULL CHECK (kind IN (0, 1)),  -- 0 activity, 1 push-to-start
    token            bytea NOT NULL,
    registered_at_ms bigint NOT NULL,
    expires_at       bigint,                                  -- unix s; NULL: no expiry
    PRIMARY KEY (channel, shard, kind, token)
);

CREATE TABLE events (
    id                 text PRIMARY KEY,
    channel            bigint NOT NULL,
    seq                bigint NOT NULL,
    kind               text NOT NULL CHECK (kind IN ('start', 'update', 'end')),
    aps_timestamp      bigint NOT NULL,
    payload            bytea NOT NULL,
    priority           bigint NOT NULL,
    expiration         bigint,
    state              text NOT NULL CHECK (state IN ('queued', 'sending', 'done', 'superseded', 'failed')),
    failure_reason     text,
    superseded_by      text,
    idempotency_key    text,
    created_at_ms      bigint NOT NULL,
    started_at_ms      bigint,
    finished_at_ms     bigint,
    targets            bigint NOT NULL DEFAULT 0,
    broadcast_state    text NOT NULL DEFAULT 'none' CHECK (broadcast_state IN ('none', 'pending', 'sent', 'failed', 'skipped')),
    broadcast_reason   text,
    UNIQUE (channel, seq)
);

-- The same Idempotency-Key posted to two workers at once makes one event: the second
-- INSERT waits for the first and then fails with 23505.
CREATE UNIQUE INDEX events_idempotency ON events (channel, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX events_unfinished ON events (state) WHERE state IN ('queued', 'sending');

-- Progress of one event's fan-out in one shard; the event's totals are the sums over its
-- shards. Written only by the shard's lease holder, fenced by (owner, attempt).
CREATE TABLE checkpoints (
    event_id   text NOT NULL REFERENCES events (id) ON DELETE CASCADE,
    shard      bigint NOT NULL,
    cursor     bytea,                 -- every target up to it (in pass order) is finished
    pass_start bytea,
    wrapped    boolean NOT NULL DEFAULT false,
    done       boolean NOT NULL DEFAULT false,
    sent       bigint NOT NULL DEFAULT 0,
    failed     bigint NOT NULL DEFAULT 0,
    pruned     bigint NOT NULL DEFAULT 0,
    retried    bigint NOT NULL DEFAULT 0,
    skipped    bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (event_id, shard)
);

CREATE TABLE api_keys (
    id              text PRIMARY KEY,
    role            text NOT NULL CHECK (role IN ('admin', 'publisher', 'subscriber')),
    channels        jsonb NOT NULL,   -- array of patterns: exact ids or prefix*
    secret_hash     bytea NOT NULL,
    label           text,
    created_at_ms   bigint NOT NULL,
    revoked_at_ms   bigint,
    last_used_at_ms bigint
);

-- Who sends which shard of which channel. A row per (channel, shard), made with the
-- channel; `owner` is a worker id (new on every start), NULL when free. `attempt` goes up
-- by one on every claim, so (owner, attempt) names one holding of the lease and fences
-- every write made under it. `expires_at` is by the database's clock only.
CREATE TABLE leases (
    channel    bigint NOT NULL,
    shard      bigint NOT NULL,
    owner      text,
    attempt    bigint NOT NULL DEFAULT 0,
    expires_at timestamptz NOT NULL DEFAULT '-infinity',
    PRIMARY KEY (channel, shard)
);
CREATE INDEX leases_expiry ON leases (expires_at);
-- The table is small and updated on every renewal: vacuum it often.
ALTER TABLE leases SET (autovacuum_vacuum_scale_factor = 0.0, autovacuum_vacuum_threshold = 200);
