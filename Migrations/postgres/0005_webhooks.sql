-- Webhooks (docs/api.md, "Webhooks") and their durable outbox, as on SQLite.

CREATE TABLE webhooks (
    id            text PRIMARY KEY,
    url           text NOT NULL,
    events        jsonb NOT NULL,
    channels      jsonb NOT NULL,
    secret_sealed bytea NOT NULL,
    created_at_ms bigint NOT NULL
);

-- Inserts take the transaction-level advisory lock `webhook_outbox` first, so ids are
-- committed in increasing order and a dispatcher reading `id > last seen` misses none.
CREATE TABLE webhook_deliveries (
    id            bigserial PRIMARY KEY,
    webhook_id    text NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    type          text NOT NULL,
    payload       text NOT NULL,
    created_at_ms bigint NOT NULL,
    attempts      integer NOT NULL DEFAULT 0,
    not_before_ms bigint NOT NULL
);
CREATE INDEX webhook_deliveries_by_webhook ON webhook_deliveries (webhook_id, id);

-- What happened, recorded in the same transaction as the fact (an event's final state,
-- the subscriptions a prune deleted, a channel's close) while a webhook exists; the
-- dispatching worker turns reports into deliveries and deletes them in one transaction.
CREATE TABLE webhook_reports (
    id            bigserial PRIMARY KEY,
    type          text NOT NULL,
    channel       text NOT NULL,
    payload       text NOT NULL,
    created_at_ms bigint NOT NULL
);

-- One dispatcher at a time over all webhooks (any worker may hold it), by the
-- database's clock.
CREATE TABLE webhook_dispatch (
    name       text PRIMARY KEY,
    holder     text NOT NULL,
    expires_at timestamptz NOT NULL
);
