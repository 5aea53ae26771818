import COpenSSL

/// Conversions between the two encodings of a P-256 ECDSA signature: DER (`ECDSA-Sig-Value`,
/// what OpenSSL's EVP layer produces and checks) and the 64-byte R‖S form JWS uses for ES256
/// (RFC 7518 §3.4: each integer big-endian, left-padded with zeros to 32 bytes).
enum ECDSASignature {
    /// Width of one integer of a P-256 signature in the JWS form.
    static let scalarLength = 32

    /// R‖S from a DER signature; nil when the DER does not parse or an integer is wider
    /// than 32 bytes. Leaves the thread's OpenSSL error queue empty.
    static func raw(fromDER der: [UInt8]) -> [UInt8]? {
        let sig: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &cursor, buffer.count)
        }
        guard let sig else {
            OpenSSLError.clearQueue()
            return nil
        }
        defer { ECDSA_SIG_free(sig) }
        var r: OpaquePointer? = nil
        var s: OpaquePointer? = nil
        ECDSA_SIG_get0(sig, &r, &s)
        var out = [UInt8](repeating: 0, count: 2 * scalarLength)
        let ok = out.withUnsafeMutableBufferPointer { p in
            BN_bn2binpad(r, p.baseAddress, Int32(scalarLength)) == Int32(scalarLength)
                && BN_bn2binpad(s, p.baseAddress! + scalarLength, Int32(scalarLength)) == Int32(scalarLength)
        }
        guard ok else {
            OpenSSLError.clearQueue()
            return nil
        }
        return out
    }

    /// DER from R‖S; nil unless `raw` is exactly 64 bytes. Leaves the thread's OpenSSL error
    /// queue empty.
    static func der(fromRaw raw: [UInt8]) -> [UInt8]? {
        guard raw.count == 2 * scalarLength else { return nil }
        guard let sig = ECDSA_SIG_new() else {
            OpenSSLError.clearQueue()
            return nil
        }
        defer { ECDSA_SIG_free(sig) }
        let (r, s) = raw.withUnsafeBufferPointer { p in
            (
                BN_bin2bn(p.baseAddress, Int32(scalarLength), nil),
                BN_bin2bn(p.baseAddress! + scalarLength, Int32(scalarLength), nil)
            )
        }
        // ECDSA_SIG_set0 takes ownership of both BIGNUMs only when it succeeds.
        guard let r, let s, ECDSA_SIG_set0(sig, r, s) == 1 else {
            BN_free(r)
            BN_free(s)
            OpenSSLError.clearQueue()
            return nil
        }
        var out: UnsafeMutablePointer<UInt8>? = nil
        let length = i2d_ECDSA_SIG(sig, &out)
        guard length > 0, let out else {
            OpenSSLError.clearQueue()
            return nil
        }
        defer { herald_OPENSSL_free(out) }
        return Array(UnsafeBufferPointer(start: out, count: Int(length)))
    }
}
