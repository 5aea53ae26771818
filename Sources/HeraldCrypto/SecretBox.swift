import COpenSSL
import Glibc
import HeraldCore

/// AES-256-GCM with one 32-byte key (OpenSSL EVP): how webhook signing secrets are kept
/// at rest (docs/operations.md, "Webhook secrets at rest"). A sealed value is a random
/// 12-byte nonce, the ciphertext and the 16-byte tag; `associated` (the webhook's id) is
/// authenticated, so a sealed secret copied onto another row does not open. Any thread.
public struct SecretBox: Sendable {
    public static let keyLength = 32
    static let nonceLength = 12
    static let tagLength = 16
    private let key: [UInt8]

    /// Throws `CryptoError` `.invalidArgument` unless `key` is 32 bytes.
    public init(key: [UInt8]) throws(CryptoError) {
        guard key.count == Self.keyLength else {
            throw CryptoError(.invalidArgument, "a secret box key is \(Self.keyLength) bytes, not \(key.count)")
        }
        self.key = key
    }

    /// Encrypts `plaintext`. Throws `CryptoError` when OpenSSL fails.
    public func seal(_ plaintext: [UInt8], associated: [UInt8] = []) throws(CryptoError) -> [UInt8] {
        let nonce = SecureRandom.bytes(Self.nonceLength)
        var tag = [UInt8](repeating: 0, count: Self.tagLength)
        let body = try crypt(encrypt: true, nonce: nonce, input: plaintext, associated: associated, tag: &tag)
        return nonce + body + tag
    }

    /// Decrypts what `seal` made with this key and `associated`. Throws `CryptoError`
    /// `.invalidKey` when it does not authenticate (another key, altered bytes).
    public func open(_ sealed: [UInt8], associated: [UInt8] = []) throws(CryptoError) -> [UInt8] {
        guard sealed.count >= Self.nonceLength + Self.tagLength else {
            throw CryptoError(.invalidKey, "a sealed secret is at least \(Self.nonceLength + Self.tagLength) bytes")
        }
        let nonce = Array(sealed.prefix(Self.nonceLength))
        var tag = Array(sealed.suffix(Self.tagLength))
        let body = Array(sealed.dropFirst(Self.nonceLength).dropLast(Self.tagLength))
        return try crypt(encrypt: false, nonce: nonce, input: body, associated: associated, tag: &tag)
    }

    private func crypt(
        encrypt: Bool, nonce: [UInt8], input: [UInt8], associated: [UInt8], tag: inout [UInt8]
    ) throws(CryptoError) -> [UInt8] {
        guard let ctx = EVP_CIPHER_CTX_new() else { throw CryptoError(.invalidArgument, "EVP_CIPHER_CTX_new failed") }
        defer { EVP_CIPHER_CTX_free(ctx) }
        func fail(_ op: String) -> CryptoError {
            CryptoError(encrypt ? .invalidArgument : .invalidKey, "AES-256-GCM \(op) failed", underlying: OpenSSLError.drain(op))
        }
        let initOK =
            encrypt
            ? EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), nil, key, nonce) == 1
            : EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), nil, key, nonce) == 1
        guard initOK else { throw fail("init") }
        var n: Int32 = 0
        if !associated.isEmpty {
            let ok =
                encrypt
                ? EVP_EncryptUpdate(ctx, nil, &n, associated, Int32(associated.count)) == 1
                : EVP_DecryptUpdate(ctx, nil, &n, associated, Int32(associated.count)) == 1
            guard ok else { throw fail("aad") }
        }
        var out = [UInt8](repeating: 0, count: input.count + 16)
        var total: Int32 = 0
        let updateOK = out.withUnsafeMutableBufferPointer { o in
            encrypt
                ? EVP_EncryptUpdate(ctx, o.baseAddress, &total, input, Int32(input.count)) == 1
                : EVP_DecryptUpdate(ctx, o.baseAddress, &total, input, Int32(input.count)) == 1
        }
        guard updateOK else { throw fail("update") }
        if encrypt {
            let ok = out.withUnsafeMutableBufferPointer { o in EVP_EncryptFinal_ex(ctx, o.baseAddress! + Int(total), &n) == 1 }
            guard ok else { throw fail("final") }
            total += n
            let tagOK = tag.withUnsafeMutableBytes { t in
                EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, Int32(Self.tagLength), t.baseAddress) == 1
            }
            guard tagOK else { throw fail("tag") }
        } else {
            let tagOK = tag.withUnsafeMutableBytes { t in
                EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, Int32(Self.tagLength), t.baseAddress) == 1
            }
            guard tagOK else { throw fail("tag") }
            let ok = out.withUnsafeMutableBufferPointer { o in EVP_DecryptFinal_ex(ctx, o.baseAddress! + Int(total), &n) == 1 }
            guard ok else { throw fail("authentication") }
            total += n
        }
        return Array(out.prefix(Int(total)))
    }
}

extension SecretBox {
    /// The key in the file at `path` (64 hex digits), made and written there with mode 0600
    /// when the file does not exist. Blocking I/O. Throws `CryptoError` (`.io` naming the
    /// path, `.invalidKey` when the file holds something else).
    public static func loadOrCreateKeyFile(_ path: String) throws(CryptoError) -> (SecretBox, created: Bool) {
        let text: String
        do {
            text = try SecretFile.read(path)
        } catch let e where e.kind == .io(errno: ENOENT) {
            let key = SecureRandom.bytes(keyLength)
            try SecretFile.write(Hex.encode(key) + "\n", to: path)
            return (try SecretBox(key: key), true)
        }
        guard let key = Hex.decode(text.filter { !$0.isWhitespace }), key.count == keyLength else {
            throw CryptoError(.invalidKey, "\(path) must hold a \(keyLength)-byte key as \(keyLength * 2) hex digits")
        }
        return (try SecretBox(key: key), false)
    }
}
