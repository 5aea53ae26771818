import HeraldCore

/// Whether a device token's bytes are hexadecimal (reference §3: a token is sent as hex),
/// eight bytes at a time (`HexWords`): the check ran per byte in the simulator's hottest loop.
enum SimHex {
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
            if !HexWords.isHex8(p.loadUnaligned(fromByteOffset: i, as: UInt64.self)) { return false }
            i += 8
        }
        while i < p.count {
            if !isHex(byte: p[i]) { return false }
            i += 1
        }
        return true
    }
}
