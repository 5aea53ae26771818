/// Hexadecimal digits checked eight bytes at a time (a device token in the simulator's
/// hottest loop, every `apns-id` it receives). For bytes below 0x80, adding 0x80 - k to each
/// sets its top bit exactly when it is at least k, with no carry into the next byte; a word
/// holding a byte with its top bit already set is refused first.
public enum HexWords {
    @usableFromInline static let ones: UInt64 = 0x0101_0101_0101_0101
    @usableFromInline static let highs: UInt64 = 0x8080_8080_8080_8080

    /// The top bit of each byte of `x` (all below 0x80) set when that byte is in `lo...hi`.
    @inlinable @inline(__always)
    static func inRange(_ x: UInt64, _ lo: UInt8, _ hi: UInt8) -> UInt64 {
        let atLeastLo = x &+ ones &* UInt64(0x80 - lo)
        let aboveHi = x &+ ones &* UInt64(0x7f - hi)
        return atLeastLo & ~aboveHi & highs
    }

    /// True when all eight bytes of `w` are `0-9`, `a-f` or `A-F`.
    @inlinable @inline(__always)
    public static func isHex8(_ w: UInt64) -> Bool {
        guard w & highs == 0 else { return false }
        return inRange(w, 0x30, 0x39) | inRange(w | 0x2020_2020_2020_2020, 0x61, 0x66) == highs
    }

    /// True when all eight bytes of `w` are `0-9` or `a-f`.
    @inlinable @inline(__always)
    public static func isLowercaseHex8(_ w: UInt64) -> Bool {
        guard w & highs == 0 else { return false }
        return inRange(w, 0x30, 0x39) | inRange(w, 0x61, 0x66) == highs
    }
}
