import HeraldCore

/// Hex (push tokens on the wire) and Base64URL (JWT segments). The input is used both as
/// bytes to encode and as text to decode.
enum CodecsTarget {
    static func run(_ data: [UInt8]) {
        FuzzCheck.expect(Hex.decode(Hex.encode(data)) == data, "hex round trip of \(data.count) bytes")
        FuzzCheck.expect(Base64URL.decode(Base64URL.encode(data)) == data, "base64url round trip of \(data.count) bytes")

        let text = String(decoding: data, as: UTF8.self)
        if let bytes = Hex.decode(text) {
            FuzzCheck.expect(bytes.count * 2 == text.utf8.count, "hex '\(text)' decoded to \(bytes.count) bytes")
            FuzzCheck.expect(Hex.encode(bytes) == text.lowercased(), "hex '\(text)' is not the lower-case encoding read back")
        }
        if let bytes = Base64URL.decode(text) {
            FuzzCheck.expect(bytes.count == text.utf8.count * 3 / 4, "base64url '\(text)' decoded to \(bytes.count) bytes")
            FuzzCheck.expect(Base64URL.decode(Base64URL.encode(bytes)) == bytes, "base64url '\(text)' re-encoding")
        }
    }
}
