import COpenSSL
import HeraldCore

/// Cryptographically secure random bytes from OpenSSL's DRBG (`RAND_bytes`), for API
/// secrets, serial numbers and anything an attacker must not guess.
public enum SecureRandom {
    /// `count` random bytes. Any thread.
    ///
    /// Stops the process (`fatalError`) if OpenSSL cannot produce them (its entropy source
    /// failed): a secret made from anything weaker must never be handed out.
    public static func bytes(_ count: Int) -> [UInt8] {
        precondition(count >= 0 && count <= Int(Int32.max), "SecureRandom.bytes: count out of range")
        guard count > 0 else { return [] }
        var out = [UInt8](repeating: 0, count: count)
        let rc = out.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32(count)) }
        guard rc == 1 else {
            fatalError("RAND_bytes failed: \(OpenSSLError.drain("RAND_bytes"))")
        }
        return out
    }

    /// `bytes` random bytes as unpadded base64url (32 bytes → 43 characters), the form of
    /// API secrets. Any thread; stops the process like `bytes(_:)`.
    public static func token(bytes count: Int) -> String {
        Base64URL.encode(bytes(count))
    }
}
