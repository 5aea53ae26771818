import HeraldPostgres
import HeraldStore

/// Every lease of a renewal tick in one statement: the (channel, shard, attempt) holdings
/// of all of them as arrays, renewed where (owner, attempt) is still this worker's.
extension PostgresStore: LeaseRenewals {
    public func renewLeases(_ leases: [Lease]) throws -> [Int64: Lease?] {
        let holdings = held.withLock { $0 }
        var channels: [PostgresValue] = []
        var shards: [PostgresValue] = []
        var attempts: [PostgresValue] = []
        for l in leases {
            for (s, a) in (holdings[l.channelNum] ?? [:]).sorted(by: { $0.key < $1.key }) where l.shards.contains(Int(s)) {
                channels.append(.int8(l.channelNum))
                shards.append(.int8(s))
                attempts.append(.int8(a))
            }
        }
        var rows: [Int64: [PostgresRow]] = [:]
        if !channels.isEmpty {
            let renewed = try write { c in
                try c.query(
                    """
                    UPDATE leases AS l SET expires_at = clock_timestamp() + $4::int8 * interval '1 millisecond'
                    FROM unnest($1::int8[], $2::int8[], $3::int8[]) AS h(channel, shard, attempt)
                    WHERE l.channel = h.channel AND l.shard = h.shard AND l.owner = $5 AND l.attempt = h.attempt
                    RETURNING l.channel, l.shard, l.attempt, l.expires_at, \(Self.leftMillis)
                    """,
                    [.array(channels), .array(shards), .array(attempts), .int8(leaseMillis), .text(workerID.rawValue)])
            }
            for r in renewed { rows[try r.int64("channel"), default: []].append(r) }
        }
        var out: [Int64: Lease?] = [:]
        for l in leases { out[l.channelNum] = .some(try lease(channelNum: l.channelNum, rows[l.channelNum] ?? [])) }
        return out
    }
}
