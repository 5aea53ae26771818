/// Set operations on shards (several workers split a channel's shards between them).
extension ShardSet {
    /// The shards, lowest first.
    public var members: [Int] { (0..<Shards.count).filter(contains) }
    public var count: Int { bits.nonzeroBitCount }

    public func union(_ other: ShardSet) -> ShardSet { ShardSet(bits: bits | other.bits) }
    public func intersection(_ other: ShardSet) -> ShardSet { ShardSet(bits: bits & other.bits) }
    public func subtracting(_ other: ShardSet) -> ShardSet { ShardSet(bits: bits & ~other.bits) }
    public func isSuperset(of other: ShardSet) -> Bool { other.bits & ~bits == 0 }

    /// No shard: what a lease that lost everything covers.
    public static let empty = ShardSet([])

    init(bits: UInt64) { self.init((0..<Shards.count).filter { bits & (1 << UInt64($0)) != 0 }) }
}
