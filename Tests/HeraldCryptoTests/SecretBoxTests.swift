import Foundation
import HeraldCrypto
import Testing

@Suite struct SecretBoxTests {
    @Test func aSealedSecretOpensOnlyWithItsKeyAndUnaltered() throws {
        let box = try SecretBox(key: SecureRandom.bytes(32))
        let secret = Array("whsec_example".utf8)
        let sealed = try box.seal(secret)
        #expect(sealed.count == 12 + secret.count + 16)
        #expect(try box.open(sealed) == secret)
        #expect(try box.seal(secret) != sealed, "a fresh nonce each time")
        var altered = sealed
        altered[14] ^= 1
        #expect(throws: CryptoError.self) { try box.open(altered) }
        #expect(throws: CryptoError.self) { try SecretBox(key: SecureRandom.bytes(32)).open(sealed) }
        #expect(throws: CryptoError.self) { try box.open(Array(sealed.prefix(20))) }
        #expect(throws: CryptoError.self) { try SecretBox(key: [1, 2, 3]) }
    }

    @Test func theKeyFileIsMadeOnceWithMode0600AndReadBack() throws {
        let path = NSTemporaryDirectory() + "herald-whkey-\(UUID().uuidString)"
        defer { unlink(path) }
        let (a, created) = try SecretBox.loadOrCreateKeyFile(path)
        #expect(created)
        var st = stat()
        #expect(stat(path, &st) == 0 && st.st_mode & 0o777 == 0o600)
        let (b, again) = try SecretBox.loadOrCreateKeyFile(path)
        #expect(!again)
        #expect(try b.open(try a.seal([7, 7])) == [7, 7])
        try "not a key\n".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(throws: CryptoError.self) { try SecretBox.loadOrCreateKeyFile(path) }
    }
}
