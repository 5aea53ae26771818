-- Herald's schema, version 1. Applied in one transaction by `herald migrate` / `serve`.

-- Channels. `num` is the compact key that subscriptions and events carry (an integer
-- instead of the id text in every one of millions of rows).
CREATE TABLE channels (
    num             INTEGER PRIMARY KEY,
    id              TEXT NOT NULL UNIQUE,
    bundle_id       TEXT NOT NULL,
    mode            TEXT NOT NULL CHECK (mode IN ('fanout', 'broadcast', 'hybrid')),
    environment     TEXT NOT NULL CHECK (environment IN ('sandbox', 'production')),
    storage_policy  TEXT NOT NULL CHECK (storage_policy IN ('none', 'most-recent')),
    apns_channel_id TEXT,
    state           TEXT NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'closed')),
    -- Order guard (design, delivery 8): after an `end`, updates wait for a new `start`.
    lifecycle       TEXT NOT NULL DEFAULT 'idle' CHECK (lifecycle IN ('idle', 'started', 'ended')),
    last_seq        INTEGER NOT NULL DEFAULT 0,
    last_timestamp  INTEGER NOT NULL DEFAULT 0,
    -- The event whose state a late joiner is sent (the last update or end since a start).
    current_event   TEXT,
    catch_up        INTEGER NOT NULL DEFAULT 1,
    min_interval_ms INTEGER NOT NULL DEFAULT 0,
    p10_budget_per_hour INTEGER NOT NULL DEFAULT 0,
    created_at_ms   INTEGER NOT NULL,
    closed_at_ms    INTEGER
) STRICT;

-- One Live Activity push token (or push-to-start token) per row. Tokens are bytes at
-- rest (half the size of hex, faster scans); the key orders a channel's tokens for the
-- fan-out scan.
CREATE TABLE subscriptions (
    channel          INTEGER NOT NULL,
    kind             INTEGER NOT NULL CHECK (kind IN (0, 1)),  -- 0 activity, 1 push-to-start
    token            BLOB NOT NULL,
    registered_at_ms INTEGER NOT NULL,
    expires_at       INTEGER,                                  -- unix s; NULL: no expiry
    PRIMARY KEY (channel, kind, token)
) STRICT, WITHOUT ROWID;

-- Every accepted publish, committed before it is acknowledged.
CREATE TABLE events (
    id                 TEXT PRIMARY KEY,
    channel            INTEGER NOT NULL,
    seq                INTEGER NOT NULL,
    kind               TEXT NOT NULL CHECK (kind IN ('start', 'update', 'end')),
    aps_timestamp      INTEGER NOT NULL,
    payload            BLOB NOT NULL,          -- the exact bytes sent to APNs
    priority           INTEGER NOT NULL,
    expiration         INTEGER,
    state              TEXT NOT NULL CHECK (state IN ('queued', 'sending', 'done', 'superseded', 'failed')),
    failure_reason     TEXT,
    superseded_by      TEXT,
    idempotency_key    TEXT,
    created_at_ms      INTEGER NOT NULL,
    started_at_ms      INTEGER,
    finished_at_ms     INTEGER,
    targets            INTEGER NOT NULL DEFAULT 0,
    sent               INTEGER NOT NULL DEFAULT 0,
    failed             INTEGER NOT NULL DEFAULT 0,
    pruned             INTEGER NOT NULL DEFAULT 0,
    retried            INTEGER NOT NULL DEFAULT 0,
    skipped            INTEGER NOT NULL DEFAULT 0,  -- targets left to a newer event
    -- Checkpoint of the fan-out: the pass starts at pass_start, runs to the end of the
    -- channel's tokens, wraps to the start, and ends at pass_start. Every target up to
    -- `cursor` (in pass order) is finished.
    pass_start         BLOB,
    cursor             BLOB,
    wrapped            INTEGER NOT NULL DEFAULT 0,
    broadcast_state    TEXT NOT NULL DEFAULT 'none' CHECK (broadcast_state IN ('none', 'pending', 'sent', 'failed', 'skipped')),
    broadcast_reason   TEXT,
    UNIQUE (channel, seq)
) STRICT;

CREATE UNIQUE INDEX events_idempotency ON events (channel, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX events_unfinished ON events (state) WHERE state IN ('queued', 'sending');

-- API keys: only a hash of the secret is kept.
CREATE TABLE api_keys (
    id              TEXT PRIMARY KEY,
    role            TEXT NOT NULL CHECK (role IN ('admin', 'publisher', 'subscriber')),
    channels        TEXT NOT NULL,   -- JSON array of patterns: exact ids or prefix*
    secret_hash     BLOB NOT NULL,
    label           TEXT,
    created_at_ms   INTEGER NOT NULL,
    revoked_at_ms   INTEGER,
    last_used_at_ms INTEGER
) STRICT;
