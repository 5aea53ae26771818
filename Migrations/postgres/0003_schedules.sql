-- Herald's PostgreSQL schema, version 3 (issue 15): scheduled publishes (`send_at`), their
-- states `scheduled` and `cancelled`, and channel expiry (`expires_at`), as
-- Migrations/0002_schedules.sql does on SQLite.

ALTER TABLE events DROP CONSTRAINT events_state_check;
ALTER TABLE events ADD CONSTRAINT events_state_check
    CHECK (state IN ('queued', 'sending', 'done', 'superseded', 'failed', 'scheduled', 'cancelled'));
-- Unix s a scheduled publish goes out at (NULL: published live), and the publish body as
-- validated (without send_at), which the event is rendered from when it goes out. A
-- scheduled event's seq is provisional (its place in the listing) until it is sent.
ALTER TABLE events ADD COLUMN send_at bigint;
ALTER TABLE events ADD COLUMN body bytea;
CREATE INDEX events_scheduled ON events (send_at) WHERE state = 'scheduled';

ALTER TABLE channels ADD COLUMN expires_at bigint;
CREATE INDEX channels_expiry ON channels (expires_at) WHERE expires_at IS NOT NULL AND state = 'open';
