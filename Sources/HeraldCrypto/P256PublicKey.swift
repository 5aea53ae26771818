import COpenSSL

/// An EC P-256 public key (an `EVP_PKEY`, freed when the object goes away), for checking
/// ES256 signatures such as the simulator's check of provider tokens.
///
/// `@unchecked Sendable` without a lock: the `EVP_PKEY` is never modified after `init`,
/// and each verification uses its own `EVP_MD_CTX`. Any thread may use it.
public final class P256PublicKey: @unchecked Sendable {
    private let pkey: OpaquePointer

    /// Takes ownership of `pkey` (freed here if the checks fail).
    private init(owning pkey: OpaquePointer) throws(CryptoError) {
        do {
            try P256KeyCheck.requireP256(pkey, "the public key")
        } catch {
            EVP_PKEY_free(pkey)
            throw error
        }
        self.pkey = pkey
    }

    deinit { EVP_PKEY_free(pkey) }

    /// The public half of a private key, as a key of its own (so it carries no secret).
    convenience init(publicPartOf privateKey: OpaquePointer) throws {
        var der: UnsafeMutablePointer<UInt8>? = nil
        let length = i2d_PUBKEY(privateKey, &der)
        try checkOpenSSL(length > 0 && der != nil, "i2d_PUBKEY")
        defer { herald_OPENSSL_free(der) }
        var cursor: UnsafePointer<UInt8>? = UnsafePointer(der)
        let pkey = try checkOpenSSL(d2i_PUBKEY(nil, &cursor, Int(length)), "d2i_PUBKEY")
        try self.init(owning: pkey)
    }

    /// Loads a PEM SubjectPublicKeyInfo (`BEGIN PUBLIC KEY`). Any thread.
    /// - Throws: `CryptoError` `.invalidKey` when no public key can be decoded,
    ///   `.unsupportedKey` when it is not EC P-256.
    public convenience init(pem: String) throws {
        OpenSSLError.clearQueue()
        let pkey: OpaquePointer = try MemoryBIO.reading(pem) { bio in
            guard let key = PEM_read_bio_PUBKEY(bio, nil, refusePassword, nil) else {
                throw CryptoError(
                    .invalidKey, "the text is not a PEM public key (BEGIN PUBLIC KEY)",
                    underlying: OpenSSLError.drain("PEM_read_bio_PUBKEY"))
            }
            return key
        }
        try self.init(owning: pkey)
    }

    /// The key as PEM SubjectPublicKeyInfo (`BEGIN PUBLIC KEY`). Any thread.
    /// - Throws: `OpenSSLError` when OpenSSL cannot encode it.
    public func pem() throws -> String {
        OpenSSLError.clearQueue()
        let bio = try MemoryBIO()
        try checkOpenSSL(PEM_write_bio_PUBKEY(bio.bio, pkey) == 1, "PEM_write_bio_PUBKEY")
        return bio.text()
    }

    /// True when `signature` is a valid ES256 signature of `message` by this key, in the
    /// 64-byte JWS form R‖S; false for anything else, including a DER signature or a
    /// signature of another length. Leaves the thread's OpenSSL error queue empty.
    /// Any thread, concurrently.
    public func verifyES256(signature: [UInt8], message: some Collection<UInt8>) -> Bool {
        guard let der = ECDSASignature.der(fromRaw: signature) else { return false }
        defer { OpenSSLError.clearQueue() }  // a bad signature queues errors nobody will read
        guard let md = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(md) }
        guard EVP_DigestVerifyInit(md, nil, EVP_sha256(), nil, pkey) == 1 else { return false }
        return withContiguousBytes(message) { p, n in
            EVP_DigestVerify(md, der, der.count, p, n) == 1
        }
    }

    /// The `EVP_PKEY`, borrowed: valid only while this object lives, never to be freed or
    /// modified by the caller.
    package var evpPKey: OpaquePointer { pkey }
}
