/// Which shard of a channel a token falls in: FNV-1a (64-bit) of the token's bytes, mod
/// the channel's shard count. Stable forever (it decides where rows live), so it is
/// spelled out here rather than taken from `Hasher`, which is seeded per process.
public enum ShardHash {
    /// The 64-bit FNV-1a hash of `bytes`.
    public static func fnv1a(_ bytes: some Sequence<UInt8>) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in bytes {
            h ^= UInt64(b)
            h = h &* 0x0000_0100_0000_01b3
        }
        return h
    }

    /// The shard of `token` among `count` (≥ 1): in `0..<count`.
    public static func shard(of token: some Sequence<UInt8>, count: Int) -> Int {
        precondition(count >= 1, "a channel has at least one shard")
        return Int(fnv1a(token) % UInt64(count))
    }
}
