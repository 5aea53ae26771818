-- Webhooks (docs/api.md, "Webhooks") and their durable outbox.

CREATE TABLE webhooks (
    id            TEXT PRIMARY KEY,
    url           TEXT NOT NULL,
    events        TEXT NOT NULL,   -- JSON array of event types
    channels      TEXT NOT NULL,   -- JSON array of ids or prefix* patterns; [] = every channel
    secret_sealed BLOB NOT NULL,   -- AES-256-GCM: nonce, ciphertext, tag (docs/operations.md)
    created_at_ms INTEGER NOT NULL
) STRICT;

-- One row per delivery waiting; removed once answered 2xx or dropped. The id is the
-- order per webhook.
CREATE TABLE webhook_deliveries (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    webhook_id    TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    type          TEXT NOT NULL,
    payload       TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL,
    attempts      INTEGER NOT NULL DEFAULT 0,
    not_before_ms INTEGER NOT NULL
) STRICT;
CREATE INDEX webhook_deliveries_by_webhook ON webhook_deliveries (webhook_id, id);

-- What happened, recorded in the same transaction as the fact (an event's final state,
-- the subscriptions a prune deleted, a channel's close) while a webhook exists; the
-- dispatcher turns reports into deliveries and deletes them in one transaction.
CREATE TABLE webhook_reports (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    type          TEXT NOT NULL,
    channel       TEXT NOT NULL,
    payload       TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL
) STRICT;
