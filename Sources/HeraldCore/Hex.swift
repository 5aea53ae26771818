/// Hex and base64url codecs used on the wire (tokens are hex on the wire, bytes at rest).
public enum Hex {
    /// Lower-case hex of `bytes`. (Concrete, not generic: it runs per push, and a generic
    /// function called from another module is not specialised.)
    public static func encode(_ bytes: [UInt8]) -> String {
        bytes.withUnsafeBytes { encode($0) }
    }

    /// Appends the lower-case hex of `bytes` to `out` (a reused buffer: no allocation once
    /// it has the room).
    /// The digits are written into a stack buffer and appended with one copy (an `append`
    /// per digit checked uniqueness and capacity 64 times per device token: ~1,100
    /// instructions per push).
    public static func append(_ bytes: [UInt8], to out: inout [UInt8]) {
        let n = bytes.count * 2
        guard n > 0 else { return }
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: n) { tmp in
            bytes.withUnsafeBufferPointer { b in write(b, to: tmp.baseAddress!) }
            out.append(contentsOf: UnsafeBufferPointer(tmp))
        }
    }

    /// Writes the lower-case hex of `bytes` at `out` (`2 * bytes.count` bytes). A plain
    /// loop without branches, which the compiler vectorises (~130 instructions for a
    /// device token's 64 digits; eight digits per word operation measured ~230).
    public static func write(_ bytes: UnsafeBufferPointer<UInt8>, to out: UnsafeMutablePointer<UInt8>) {
        guard let src = bytes.baseAddress else { return }
        var d = out
        for i in 0..<bytes.count {
            let v = src[i]
            d[0] = digit(v >> 4)
            d[1] = digit(v & 0x0f)
            d += 2
        }
    }

    /// Lower-case hex of raw bytes.
    public static func encode(_ bytes: UnsafeRawBufferPointer) -> String {
        String(unsafeUninitializedCapacity: bytes.count * 2) { out in
            var i = 0
            for b in bytes {
                out[i] = digit(b >> 4)
                out[i + 1] = digit(b & 0x0f)
                i += 2
            }
            return i
        }
    }

    /// Lower-case hex of any byte sequence (not for hot paths).
    public static func encode<S: Sequence<UInt8>>(_ bytes: S) -> String {
        encode(Array(bytes))
    }

    @inline(__always)
    static func digit(_ v: UInt8) -> UInt8 { v < 10 ? v &+ 48 : v &+ 87 }

    @inline(__always)
    static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c &- UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c &- UInt8(ascii: "a") &+ 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c &- UInt8(ascii: "A") &+ 10
        default: nil
        }
    }

    /// Decodes hex (either case). Nil when the length is odd or a character is not hex.
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(utf8.count / 2)
        var i = 0
        while i < utf8.count {
            guard let hi = nibble(utf8[i]), let lo = nibble(utf8[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }
}

/// base64url without padding (RFC 4648 §5), as JWS requires (RFC 7515 §2).
public enum Base64URL {
    private static let alphabet: [UInt8] = Array(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        let input = Array(bytes)
        var out = [UInt8]()
        out.reserveCapacity((input.count + 2) / 3 * 4)
        var i = 0
        while i + 2 < input.count {
            let n = UInt32(input[i]) << 16 | UInt32(input[i + 1]) << 8 | UInt32(input[i + 2])
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
            out.append(alphabet[Int(n >> 6 & 63)])
            out.append(alphabet[Int(n & 63)])
            i += 3
        }
        let rest = input.count - i
        if rest == 1 {
            let n = UInt32(input[i]) << 16
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
        } else if rest == 2 {
            let n = UInt32(input[i]) << 16 | UInt32(input[i + 1]) << 8
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
            out.append(alphabet[Int(n >> 6 & 63)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func value(_ c: UInt8) -> UInt32? {
        switch c {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): UInt32(c - UInt8(ascii: "A"))
        case UInt8(ascii: "a")...UInt8(ascii: "z"): UInt32(c - UInt8(ascii: "a") + 26)
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(c - UInt8(ascii: "0") + 52)
        case UInt8(ascii: "-"): 62
        case UInt8(ascii: "_"): 63
        default: nil
        }
    }

    /// Decodes unpadded base64url. Nil on any character outside the alphabet (padding
    /// included) or an impossible length.
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        let input = Array(text.utf8)
        guard input.count % 4 != 1 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(input.count * 3 / 4)
        var acc: UInt32 = 0
        var bits = 0
        for c in input {
            guard let v = value(c) else { return nil }
            acc = acc << 6 | v
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: acc >> UInt32(bits)))
            }
        }
        return out
    }
}
