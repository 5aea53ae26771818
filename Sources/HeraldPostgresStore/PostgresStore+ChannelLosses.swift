import HeraldPostgres
import HeraldStore

/// Channels lost at APNs, on PostgreSQL.
extension PostgresStore: APNSChannelLosses {
    public func markAPNSChannelLost(channelNum: Int64, apnsChannelID: String, atMillis: Int64) throws {
        try write { c in
            // A loss of another APNs id (the channel was given a new one) is replaced.
            let n = try c.run(
                """
                INSERT INTO apns_channel_losses (channel, apns_channel_id, lost_at_ms)
                SELECT num, $2, $3 FROM channels WHERE num = $1
                ON CONFLICT (channel) DO UPDATE SET apns_channel_id = excluded.apns_channel_id, lost_at_ms = excluded.lost_at_ms
                WHERE apns_channel_losses.apns_channel_id <> excluded.apns_channel_id
                """, [.int8(channelNum), .text(apnsChannelID), .int8(atMillis)])
            if n == 0, try c.queryOne("SELECT 1 FROM channels WHERE num = $1", [.int8(channelNum)]) == nil {
                throw StoreError.channelNotFound("#\(channelNum)")
            }
        }
    }

    public func apnsChannelLoss(channelID: String) throws -> APNSChannelLoss? {
        try read { c in
            try c.queryOne(
                """
                SELECT l.channel, l.apns_channel_id, l.lost_at_ms FROM apns_channel_losses l JOIN channels c ON c.num = l.channel
                WHERE c.id = $1 AND c.state = 'open' AND c.apns_channel_id = l.apns_channel_id
                """, [.text(channelID)]
            ).map { r throws(PostgresError) in try Self.loss(r) }
        }
    }

    public func apnsChannelLosses() throws -> [APNSChannelLoss] {
        try read { c in
            try c.query(
                """
                SELECT l.channel, l.apns_channel_id, l.lost_at_ms FROM apns_channel_losses l JOIN channels c ON c.num = l.channel
                WHERE c.state = 'open' AND c.apns_channel_id = l.apns_channel_id ORDER BY l.channel
                """
            ).map { r throws(PostgresError) in try Self.loss(r) }
        }
    }

    static func loss(_ r: PostgresRow) throws(PostgresError) -> APNSChannelLoss {
        APNSChannelLoss(
            channelNum: try r.int64("channel"), apnsChannelID: try r.text("apns_channel_id"), lostAtMillis: try r.int64("lost_at_ms"))
    }
}
