import Foundation

/// Fast identifiers for the hot path.
public enum Identifiers {
    private static let hex: [UInt8] = Array("0123456789abcdef".utf8)

    /// A random version-4 UUID in the lower-case canonical 8-4-4-4-12 form APNs requires for
    /// `apns-id` (reference §3.1).
    @inlinable
    public static func lowercaseUUID<G: RandomNumberGenerator>(using g: inout G) -> String {
        uuid(g.next(), g.next())
    }

    /// The canonical lower-case form of a version-4 UUID made from 128 random bits.
    public static func uuid(_ high: UInt64, _ low: UInt64) -> String {
        var a = high
        var b = low
        a = (a & 0xffff_ffff_ffff_0fff) | 0x0000_0000_0000_4000  // version 4
        b = (b & 0x3fff_ffff_ffff_ffff) | 0x8000_0000_0000_0000  // variant 10
        return String(unsafeUninitializedCapacity: 36) { buf in
            var i = 0
            func put(_ v: UInt64, _ nibbles: Int) {
                var k = nibbles - 1
                while k >= 0 {
                    buf[i] = hex[Int((v >> (UInt64(k) * 4)) & 0xf)]
                    i += 1
                    k -= 1
                }
            }
            put(a >> 32, 8)
            buf[i] = UInt8(ascii: "-")
            i += 1
            put((a >> 16) & 0xffff, 4)
            buf[i] = UInt8(ascii: "-")
            i += 1
            put(a & 0xffff, 4)
            buf[i] = UInt8(ascii: "-")
            i += 1
            put(b >> 48, 4)
            buf[i] = UInt8(ascii: "-")
            i += 1
            put(b & 0xffff_ffff_ffff, 12)
            return 36
        }
    }

    public static func lowercaseUUID() -> String {
        var g = SystemRandomNumberGenerator()
        return lowercaseUUID(using: &g)
    }

    /// True when `s` is a lower-case canonical UUID (8-4-4-4-12 hex digits, lower case).
    public static func isLowercaseUUID(_ s: some StringProtocol) -> Bool { isLowercaseUUID(bytes: s.utf8) }

    /// `isLowercaseUUID` over UTF-8 bytes (a request's field, without making a String).
    @inlinable
    public static func isLowercaseUUID(bytes u: some Collection<UInt8>) -> Bool {
        if let fast = u.withContiguousStorageIfAvailable({ isLowercaseUUID(bytes: $0) }) { return fast }
        return isLowercaseUUIDPerByte(u)
    }

    /// `isLowercaseUUID` over bytes in memory: the 32 digits eight at a time, as four words
    /// (the simulator checks every `apns-id` it receives twice; a loop per byte cost ~520
    /// instructions per check).
    public static func isLowercaseUUID(bytes u: UnsafeBufferPointer<UInt8>) -> Bool {
        guard u.count == 36, let p = u.baseAddress else { return false }
        let dash = UInt8(ascii: "-")
        guard p[8] == dash, p[13] == dash, p[18] == dash, p[23] == dash else { return false }
        let raw = UnsafeRawPointer(p)
        func word(_ at: Int) -> UInt64 { UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: at, as: UInt64.self)) }
        func half(_ at: Int) -> UInt64 { UInt64(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: at, as: UInt32.self))) }
        // 8 digits, 4 + 4 (around the second dash), 4 + 4 (around the fourth), the last 8.
        return HexWords.isLowercaseHex8(word(0)) && HexWords.isLowercaseHex8(half(9) | half(14) << 32)
            && HexWords.isLowercaseHex8(half(19) | half(24) << 32) && HexWords.isLowercaseHex8(word(28))
    }

    /// The byte-by-byte check (a collection without contiguous storage; the reference the
    /// word check is tested against).
    @inlinable
    static func isLowercaseUUIDPerByte(_ u: some Collection<UInt8>) -> Bool {
        guard u.count == 36 else { return false }
        for (i, c) in u.enumerated() {
            if i == 8 || i == 13 || i == 18 || i == 23 {
                if c != UInt8(ascii: "-") { return false }
            } else if !((c >= 48 && c <= 57) || (c >= 97 && c <= 102)) {
                return false
            }
        }
        return true
    }
}

/// xoshiro256** — a small, fast generator for jitter and ids on hot paths (not for secrets).
@frozen
public struct FastRandom: RandomNumberGenerator, Sendable {
    @usableFromInline var s: (UInt64, UInt64, UInt64, UInt64)

    public init(seed: UInt64 = UInt64.random(in: 1...UInt64.max)) {
        var z = seed
        func splitmix() -> UInt64 {
            z &+= 0x9e37_79b9_7f4a_7c15
            var x = z
            x = (x ^ (x >> 30)) &* 0xbf58_476d_1ce4_e5b9
            x = (x ^ (x >> 27)) &* 0x94d0_49bb_1331_11eb
            return x ^ (x >> 31)
        }
        s = (splitmix(), splitmix(), splitmix(), splitmix())
    }

    @inlinable
    public mutating func next() -> UInt64 {
        let result = ((s.1 &* 5) << 7 | (s.1 &* 5) >> 57) &* 9
        let t = s.1 << 17
        s.2 ^= s.0
        s.3 ^= s.1
        s.1 ^= s.2
        s.0 ^= s.3
        s.2 ^= t
        s.3 = (s.3 << 45) | (s.3 >> 19)
        return result
    }
}
