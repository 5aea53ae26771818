import COpenSSL

/// Checks shared by the private and public key types.
enum P256KeyCheck {
    /// Throws unless `pkey` is an EC key on P-256 (prime256v1 / secp256r1), the only curve
    /// ES256 allows (RFC 7518 §3.4) and the curve of Apple's .p8 keys.
    /// - Throws: `CryptoError` (`.unsupportedKey`) naming the key type or curve found.
    static func requireP256(_ pkey: OpaquePointer, _ what: String) throws(CryptoError) {
        let base = EVP_PKEY_get_base_id(pkey)
        guard base == EVP_PKEY_EC else {
            let name = OBJ_nid2sn(base).map { String(cString: $0) } ?? "unknown"
            throw CryptoError(.unsupportedKey, "\(what) is a \(name) key; an EC P-256 key is required")
        }
        var buffer = [CChar](repeating: 0, count: 80)
        var length = 0
        let named = buffer.withUnsafeMutableBufferPointer { p in
            EVP_PKEY_get_group_name(pkey, p.baseAddress, p.count, &length) == 1
        }
        guard named else {
            OpenSSLError.clearQueue()
            throw CryptoError(.unsupportedKey, "\(what) is an EC key without a named curve; P-256 is required")
        }
        let group = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        let nid = OBJ_txt2nid(group)
        guard nid == NID_X9_62_prime256v1 || EC_curve_nist2nid(group) == NID_X9_62_prime256v1 else {
            OpenSSLError.clearQueue()
            throw CryptoError(.unsupportedKey, "\(what) is on curve \(group); P-256 is required")
        }
    }
}
