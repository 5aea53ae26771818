import HeraldSQL

/// Channels lost at APNs, on SQLite.
extension Store: APNSChannelLosses {
    public func markAPNSChannelLost(channelNum: Int64, apnsChannelID: String, atMillis: Int64) throws {
        try write { c in
            guard try Self.loadChannel(c, num: channelNum) != nil else { throw StoreError.channelNotFound("#\(channelNum)") }
            // A loss of another APNs id (the channel was given a new one) is replaced.
            try c.run(
                """
                INSERT INTO apns_channel_losses (channel, apns_channel_id, lost_at_ms) VALUES (?, ?, ?)
                ON CONFLICT (channel) DO UPDATE SET apns_channel_id = excluded.apns_channel_id, lost_at_ms = excluded.lost_at_ms
                WHERE apns_channel_losses.apns_channel_id <> excluded.apns_channel_id
                """, [.integer(channelNum), .text(apnsChannelID), .integer(atMillis)])
        }
    }

    public func apnsChannelLoss(channelID: String) throws -> APNSChannelLoss? {
        try read { c in
            let s = try c.cached(
                """
                SELECT l.channel, l.apns_channel_id, l.lost_at_ms FROM apns_channel_losses l JOIN channels c ON c.num = l.channel
                WHERE c.id = ? AND c.state = 'open' AND c.apns_channel_id = l.apns_channel_id
                """)
            try s.bind(1, text: channelID)
            return try s.step() ? APNSChannelLoss(channelNum: s.int64(0), apnsChannelID: s.text(1), lostAtMillis: s.int64(2)) : nil
        }
    }

    public func apnsChannelLosses() throws -> [APNSChannelLoss] {
        try read { c in
            var out: [APNSChannelLoss] = []
            try c.forEachRow(
                """
                SELECT l.channel, l.apns_channel_id, l.lost_at_ms FROM apns_channel_losses l JOIN channels c ON c.num = l.channel
                WHERE c.state = 'open' AND c.apns_channel_id = l.apns_channel_id ORDER BY l.channel
                """
            ) { s in
                out.append(APNSChannelLoss(channelNum: s.int64(0), apnsChannelID: s.text(1), lostAtMillis: s.int64(2)))
                return true
            }
            return out
        }
    }
}
