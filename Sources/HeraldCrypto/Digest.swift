import COpenSSL

/// SHA-256 and HMAC-SHA-256 (API key hashing).
public enum Digest {
    /// Length of a SHA-256 digest in bytes.
    public static let sha256Length = 32

    /// SHA-256 of `data`. Any thread.
    ///
    /// Stops the process (`fatalError`) only if OpenSSL has no SHA-256 at all (its default
    /// provider failed to load), where nothing in this module can work.
    public static func sha256(_ data: some Collection<UInt8>) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: sha256Length)
        var length: UInt32 = 0
        let ok = withContiguousBytes(data) { p, n in
            out.withUnsafeMutableBufferPointer { EVP_Digest(p, n, $0.baseAddress, &length, EVP_sha256(), nil) == 1 }
        }
        guard ok, length == UInt32(sha256Length) else {
            fatalError("EVP_Digest(SHA-256) failed: \(OpenSSLError.drain("EVP_Digest"))")
        }
        return out
    }

    /// HMAC-SHA-256 of `message` under `key` (RFC 2104). Any thread; stops the process
    /// like `sha256(_:)`.
    public static func hmacSHA256(key: [UInt8], message: some Collection<UInt8>) -> [UInt8] {
        precondition(key.count <= Int(Int32.max), "HMAC key too long")
        var out = [UInt8](repeating: 0, count: sha256Length)
        var length: UInt32 = 0
        let ok = withContiguousBytes(key) { k, kn in
            withContiguousBytes(message) { m, mn in
                out.withUnsafeMutableBufferPointer {
                    HMAC(EVP_sha256(), k, Int32(kn), m, mn, $0.baseAddress, &length) != nil
                }
            }
        }
        guard ok, length == UInt32(sha256Length) else {
            fatalError("HMAC(SHA-256) failed: \(OpenSSLError.drain("HMAC"))")
        }
        return out
    }
}
