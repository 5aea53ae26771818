import COpenSSL

/// An EC P-256 private key (an `EVP_PKEY`, freed when the object goes away): the Apple
/// .p8 provider-token key, or a key generated for the simulator's certificate.
///
/// `@unchecked Sendable` without a lock: the `EVP_PKEY` is never modified after `init`,
/// and OpenSSL 3 allows concurrent signing with one key as long as each call uses its own
/// `EVP_MD_CTX`, which `signES256` creates per call. Any thread may use it.
public final class P256PrivateKey: @unchecked Sendable {
    private let pkey: OpaquePointer

    /// The matching public key (computed once, at init).
    public let publicKey: P256PublicKey

    /// Takes ownership of `pkey` (freed here if the checks fail).
    private init(owning pkey: OpaquePointer, _ what: String) throws {
        do {
            try P256KeyCheck.requireP256(pkey, what)
            publicKey = try P256PublicKey(publicPartOf: pkey)
        } catch {
            EVP_PKEY_free(pkey)
            throw error
        }
        self.pkey = pkey
    }

    deinit { EVP_PKEY_free(pkey) }

    /// Loads a PEM private key: PKCS#8 (`BEGIN PRIVATE KEY`, the form of Apple's .p8 files)
    /// or SEC1 (`BEGIN EC PRIVATE KEY`). Encrypted keys are refused, never prompted for.
    /// Any thread.
    /// - Throws: `CryptoError` `.invalidKey` when no private key can be decoded,
    ///   `.unsupportedKey` when the key is not EC P-256.
    public convenience init(pem: String) throws {
        OpenSSLError.clearQueue()
        let pkey: OpaquePointer = try MemoryBIO.reading(pem) { bio in
            guard let key = PEM_read_bio_PrivateKey(bio, nil, refusePassword, nil) else {
                throw CryptoError(
                    .invalidKey, "the text is not an unencrypted PEM private key",
                    underlying: OpenSSLError.drain("PEM_read_bio_PrivateKey"))
            }
            return key
        }
        try self.init(owning: pkey, "the private key")
    }

    /// Loads a PEM private key file (see `init(pem:)`). Any thread (blocking file I/O).
    /// - Throws: `CryptoError` `.io` naming the path when it cannot be read, else as `init(pem:)`.
    public convenience init(contentsOfFile path: String) throws {
        let text = try SecretFile.read(path)
        do {
            try self.init(pem: text)
        } catch let error as CryptoError where error.kind == .invalidKey || error.kind == .unsupportedKey {
            throw CryptoError(error.kind, "\(path): \(error.message)", underlying: error.underlying)
        }
    }

    /// A fresh random P-256 key. Any thread.
    /// - Throws: `OpenSSLError` when OpenSSL cannot generate one.
    public static func generate() throws -> P256PrivateKey {
        OpenSSLError.clearQueue()
        // EVP_EC_gen is a variadic macro Swift cannot import; these four calls are its body.
        let ctx = try checkOpenSSL(EVP_PKEY_CTX_new_from_name(nil, "EC", nil), "EVP_PKEY_CTX_new_from_name")
        defer { EVP_PKEY_CTX_free(ctx) }
        try checkOpenSSL(EVP_PKEY_keygen_init(ctx) == 1, "EVP_PKEY_keygen_init")
        try checkOpenSSL(EVP_PKEY_CTX_set_group_name(ctx, "P-256") == 1, "EVP_PKEY_CTX_set_group_name")
        var pkey: OpaquePointer? = nil
        try checkOpenSSL(EVP_PKEY_generate(ctx, &pkey) == 1, "EVP_PKEY_generate")
        return try P256PrivateKey(owning: checkOpenSSL(pkey, "EVP_PKEY_generate"), "the generated key")
    }

    /// The key as unencrypted PKCS#8 PEM (`BEGIN PRIVATE KEY`, the .p8 form). Secret
    /// material: keep it out of logs (wrap it in `Redacted`). Any thread.
    /// - Throws: `OpenSSLError` when OpenSSL cannot encode it.
    public func pkcs8PEM() throws -> String {
        OpenSSLError.clearQueue()
        let bio = try MemoryBIO()
        try checkOpenSSL(
            PEM_write_bio_PrivateKey(bio.bio, pkey, nil, nil, 0, nil, nil) == 1, "PEM_write_bio_PrivateKey")
        return bio.text()
    }

    /// Signs `message` with ECDSA over SHA-256 and returns the 64-byte JWS form R‖S
    /// (RFC 7518 §3.4), not DER. Any thread, concurrently (a fresh `EVP_MD_CTX` per call).
    /// - Throws: `OpenSSLError` when signing fails.
    public func signES256(_ message: some Collection<UInt8>) throws -> [UInt8] {
        OpenSSLError.clearQueue()
        let md = try checkOpenSSL(EVP_MD_CTX_new(), "EVP_MD_CTX_new")
        defer { EVP_MD_CTX_free(md) }
        try checkOpenSSL(EVP_DigestSignInit(md, nil, EVP_sha256(), nil, pkey) == 1, "EVP_DigestSignInit")
        var der = [UInt8](repeating: 0, count: 80)  // a P-256 DER signature is at most 72 bytes
        var length = der.count
        let signed = withContiguousBytes(message) { p, n in EVP_DigestSign(md, &der, &length, p, n) == 1 }
        try checkOpenSSL(signed, "EVP_DigestSign")
        guard let raw = ECDSASignature.raw(fromDER: Array(der[0..<length])) else {
            throw OpenSSLError(
                operation: "d2i_ECDSA_SIG", code: 0, message: "EVP_DigestSign returned a signature that does not parse")
        }
        return raw
    }

    /// The `EVP_PKEY`, borrowed: valid only while this object lives, never to be freed or
    /// modified by the caller (the TLS layer passes it to `SSL_CTX_use_PrivateKey`, which
    /// takes its own reference).
    package var evpPKey: OpaquePointer { pkey }
}
