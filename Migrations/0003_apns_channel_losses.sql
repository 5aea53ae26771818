-- Broadcast channels whose APNs channel is gone (herald channels reconcile found them
-- missing from APNs' all-channels). A loss applies while its channel still holds that
-- APNs channel id; publishing to such a channel is refused (409 channel_lost).
CREATE TABLE apns_channel_losses (
    channel         INTEGER PRIMARY KEY REFERENCES channels(num) ON DELETE CASCADE,
    apns_channel_id TEXT NOT NULL,
    lost_at_ms      INTEGER NOT NULL
) STRICT;
