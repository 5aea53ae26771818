/// A channel's subscriptions are split into `Shards.count` shards by a hash of the token
/// (contract, "Beyond one machine"). A worker sends a channel's events to the shards it
/// holds a lease on; progress is checkpointed per (event, lease). On SQLite one process
/// holds every shard of every channel: its one lease per channel covers `ShardSet.all`
/// and its pass is one scan of the channel's tokens in order.
public enum Shards {
    /// Fixed: changing it moves tokens between shards (and so between checkpoints), which
    /// takes a migration (PostgreSQL's 0008 moved every database from 16 to 48, and is
    /// `shard_count`'s default since). 48 splits evenly among 2, 3, 4, 6, 8, 12, 16 or 24
    /// workers (16 split 6/6/4 among three: the fan-out lasts as long as its largest part).
    /// At most 64 (`ShardSet` is one 64-bit word).
    public static let count = 48

    /// The shard of `token`: FNV-1a (64 bit) of its bytes, modulo `count` — the function
    /// `HeraldPostgres.ShardHash` uses. Stable across processes and versions (a PostgreSQL
    /// backend stores it with the row).
    public static func shard(of token: [UInt8]) -> Int {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in token {
            h ^= UInt64(b)
            h = h &* 0x0000_0100_0000_01b3
        }
        return Int(h % UInt64(count))
    }
}

/// A set of shards of one channel (what one lease covers).
public struct ShardSet: Sendable, Hashable, CustomStringConvertible {
    /// Bit i set: shard i is in the set.
    public private(set) var bits: UInt64

    public init(_ shards: some Sequence<Int>) {
        bits = 0
        for s in shards where (0..<Shards.count).contains(s) { bits |= 1 << UInt64(s) }
    }

    /// Every shard: what a single process holds.
    public static let all = ShardSet(0..<Shards.count)

    public var isAll: Bool { self == .all }
    public var isEmpty: Bool { bits == 0 }
    public func contains(_ shard: Int) -> Bool { (0..<Shards.count).contains(shard) && bits & (1 << UInt64(shard)) != 0 }
    /// True when `token` belongs to a shard of this set.
    public func holds(token: [UInt8]) -> Bool { isAll || contains(Shards.shard(of: token)) }

    public var description: String { isAll ? "all" : (0..<Shards.count).filter(contains).map(String.init).joined(separator: ",") }
}

/// The right to send a channel's events to some of its shards. On SQLite the process holds
/// every shard of every channel, for good (`expiresAtMillis` nil); a PostgreSQL backend
/// grants them by (channel, shard), renewed by checkpoints and expiring by its clock.
public struct Lease: Sendable, Hashable {
    public var channelNum: Int64
    public var shards: ShardSet
    /// When it lapses unless renewed (ms since 1970, the database's clock); nil: never.
    public var expiresAtMillis: Int64?
    /// Seconds the database said were left when it granted or renewed it (its clock, not
    /// this machine's): the worker counts them from when it asked (nil: never lapses).
    public var validFor: Double?

    public init(channelNum: Int64, shards: ShardSet, expiresAtMillis: Int64? = nil, validFor: Double? = nil) {
        self.channelNum = channelNum
        self.shards = shards
        self.expiresAtMillis = expiresAtMillis
        self.validFor = validFor
    }
}
