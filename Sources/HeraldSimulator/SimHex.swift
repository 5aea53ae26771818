/// Whether a device token's bytes are hexadecimal (reference §3: a token is sent as hex),
/// eight bytes at a time: the check ran per byte in the simulator's hottest loop.
enum SimHex {
    private static let ones: UInt64 = 0x0101_0101_0101_0101
    private static let highs: UInt64 = 0x8080_8080_8080_8080

    /// The high bit of each byte of `x` (all below 0x80) set when that byte is in `lo...hi`.
    @inline(__always)
    private static func inRange(_ x: UInt64, _ lo: UInt8, _ hi: UInt8) -> UInt64 {
        let atLeastLo = x &+ ones &* UInt64(0x80 - lo)
        let aboveHi = x &+ ones &* UInt64(0x7f - hi)
        return atLeastLo & ~aboveHi & highs
    }

    /// True when all eight bytes of `w` are `0-9`, `a-f` or `A-F`.
    @inline(__always)
    static func isHex8(_ w: UInt64) -> Bool {
        guard w & highs == 0 else { return false }
        let digits = inRange(w, 0x30, 0x39)
        let letters = inRange(w | 0x2020_2020_2020_2020, 0x61, 0x66)
        return digits | letters == highs
    }

    @inline(__always)
    static func isHex(byte b: UInt8) -> Bool { (b &- 48) < 10 || ((b | 0x20) &- 97) < 6 }

    /// True when every byte is `0-9`, `a-f` or `A-F` (true for no bytes).
    static func isHex(_ bytes: ArraySlice<UInt8>) -> Bool {
        bytes.withUnsafeBufferPointer { isHex($0) }
    }

    /// `isHex` over borrowed bytes (a request's field in place).
    static func isHex(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        let p = UnsafeRawBufferPointer(bytes)
        var i = 0
        while i + 8 <= p.count {
            if !isHex8(p.loadUnaligned(fromByteOffset: i, as: UInt64.self)) { return false }
            i += 8
        }
        while i < p.count {
            if !isHex(byte: p[i]) { return false }
            i += 1
        }
        return true
    }
}
