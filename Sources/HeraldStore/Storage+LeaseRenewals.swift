import HeraldCore

/// Renewing many shared leases at once. A worker renews every channel it holds every third
/// of the lease; a shared backend does them in one statement per renewal tick instead of a
/// transaction per channel. The default renews them one by one (`renewLease`).
public protocol LeaseRenewals: AnyObject, Sendable {
    /// Renews each of `leases` as `renewLease` does: by channel, the lease as renewed (nil:
    /// none of its shards is this worker's any more). Throws when the renewal failed as a
    /// whole (every deadline stays). Blocking.
    func renewLeases(_ leases: [Lease]) throws -> [Int64: Lease?]
}

extension LeaseRenewals where Self: SharedLeases {
    public func renewLeases(_ leases: [Lease]) throws -> [Int64: Lease?] {
        var renewed: [Int64: Lease?] = [:]
        for l in leases { renewed[l.channelNum] = .some(try renewLease(l)) }
        return renewed
    }
}
