-- Herald's schema, version 2 (issue 15): scheduled publishes (`send_at`), their states
-- `scheduled` and `cancelled`, and channel expiry (`expires_at`).
--
-- SQLite cannot change a CHECK constraint in place, so `events` is rebuilt (the
-- documented way: new table, copy, drop, rename) with the two new states and two new
-- columns: `send_at` (unix s; NULL for a live publish) and `body` (the publish body as
-- validated, without `send_at`: the event is rendered from it when it goes out).
CREATE TABLE events_v2 (
    id                 TEXT PRIMARY KEY,
    channel            INTEGER NOT NULL,
    -- A scheduled event's seq is provisional (its place in the listing) until it is sent,
    -- when it takes the channel's next seq.
    seq                INTEGER NOT NULL,
    kind               TEXT NOT NULL CHECK (kind IN ('start', 'update', 'end')),
    aps_timestamp      INTEGER NOT NULL,
    payload            BLOB NOT NULL,
    priority           INTEGER NOT NULL,
    expiration         INTEGER,
    state              TEXT NOT NULL CHECK (state IN ('queued', 'sending', 'done', 'superseded', 'failed', 'scheduled', 'cancelled')),
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
    skipped            INTEGER NOT NULL DEFAULT 0,
    pass_start         BLOB,
    cursor             BLOB,
    wrapped            INTEGER NOT NULL DEFAULT 0,
    broadcast_state    TEXT NOT NULL DEFAULT 'none' CHECK (broadcast_state IN ('none', 'pending', 'sent', 'failed', 'skipped')),
    broadcast_reason   TEXT,
    send_at            INTEGER,
    body               BLOB,
    UNIQUE (channel, seq)
) STRICT;

INSERT INTO events_v2 (id, channel, seq, kind, aps_timestamp, payload, priority, expiration, state, failure_reason,
                       superseded_by, idempotency_key, created_at_ms, started_at_ms, finished_at_ms, targets, sent, failed,
                       pruned, retried, skipped, pass_start, cursor, wrapped, broadcast_state, broadcast_reason)
SELECT id, channel, seq, kind, aps_timestamp, payload, priority, expiration, state, failure_reason,
       superseded_by, idempotency_key, created_at_ms, started_at_ms, finished_at_ms, targets, sent, failed,
       pruned, retried, skipped, pass_start, cursor, wrapped, broadcast_state, broadcast_reason
FROM events;

DROP TABLE events;
ALTER TABLE events_v2 RENAME TO events;

CREATE UNIQUE INDEX events_idempotency ON events (channel, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX events_unfinished ON events (state) WHERE state IN ('queued', 'sending');
-- What the duty runner reads: the scheduled events that are due, earliest first.
CREATE INDEX events_scheduled ON events (send_at) WHERE state = 'scheduled';

-- Unix seconds at which Herald ends and closes the channel; NULL: never.
ALTER TABLE channels ADD COLUMN expires_at INTEGER;
CREATE INDEX channels_expiry ON channels (expires_at) WHERE expires_at IS NOT NULL AND state = 'open';
