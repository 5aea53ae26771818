import Foundation
import Testing

@testable import HeraldCrypto

@Suite struct P256KeyTests {
    @Test func signaturesAre64BytesAndVerify() throws {
        let key = try P256PrivateKey.generate()
        for message in [[], Array("hello".utf8), [UInt8](repeating: 0xab, count: 10_000)] as [[UInt8]] {
            let signature = try key.signES256(message)
            #expect(signature.count == 64)
            #expect(key.publicKey.verifyES256(signature: signature, message: message))
        }
    }

    @Test func tamperedMessageOrSignatureIsRejected() throws {
        let key = try P256PrivateKey.generate()
        let message = Array("eyJhbGciOiJFUzI1NiJ9.e30".utf8)
        let signature = try key.signES256(message)
        var otherMessage = message
        otherMessage[0] ^= 1
        #expect(!key.publicKey.verifyES256(signature: signature, message: otherMessage))
        for index in [0, 31, 32, 63] {  // first and last byte of R, then of S
            var bad = signature
            bad[index] ^= 0x01
            #expect(!key.publicKey.verifyES256(signature: bad, message: message))
        }
        #expect(!key.publicKey.verifyES256(signature: [UInt8](repeating: 0, count: 64), message: message))
    }

    @Test func signatureOfAnyOtherLengthIsRejected() throws {
        let key = try P256PrivateKey.generate()
        let message = Array("m".utf8)
        let signature = try key.signES256(message)
        #expect(!key.publicKey.verifyES256(signature: Array(signature.dropLast()), message: message))
        #expect(!key.publicKey.verifyES256(signature: signature + [0], message: message))
        #expect(!key.publicKey.verifyES256(signature: [], message: message))
        // The DER form of the same valid signature is not accepted either: JWS wants R‖S.
        let der = try #require(ECDSASignature.der(fromRaw: signature))
        #expect(!key.publicKey.verifyES256(signature: der, message: message))
    }

    @Test func anotherKeysSignatureIsRejected() throws {
        let signer = try P256PrivateKey.generate()
        let other = try P256PrivateKey.generate()
        let signature = try signer.signES256(Array("m".utf8))
        #expect(!other.publicKey.verifyES256(signature: signature, message: Array("m".utf8)))
    }

    @Test func derAndRawFormsConvertBothWays() throws {
        let key = try P256PrivateKey.generate()
        for _ in 0..<50 {  // about one in 128 has an R or S shorter than 32 bytes
            let raw = try key.signES256(Array("x".utf8))
            let der = try #require(ECDSASignature.der(fromRaw: raw))
            #expect(der.first == 0x30)
            #expect(ECDSASignature.raw(fromDER: der) == raw)
        }
        #expect(ECDSASignature.raw(fromDER: [0x30, 0x01]) == nil)
        #expect(ECDSASignature.der(fromRaw: [1, 2, 3]) == nil)
    }

    @Test func privateKeyPEMRoundTripsAsPKCS8() throws {
        let key = try P256PrivateKey.generate()
        let pem = try key.pkcs8PEM()
        #expect(pem.hasPrefix("-----BEGIN PRIVATE KEY-----\n"))
        let loaded = try P256PrivateKey(pem: pem)
        #expect(try loaded.publicKey.pem() == key.publicKey.pem())
        let signature = try loaded.signES256(Array("m".utf8))
        #expect(key.publicKey.verifyES256(signature: signature, message: Array("m".utf8)))
    }

    @Test func publicKeyPEMRoundTrips() throws {
        let key = try P256PrivateKey.generate()
        let pem = try key.publicKey.pem()
        #expect(pem.hasPrefix("-----BEGIN PUBLIC KEY-----\n"))
        let loaded = try P256PublicKey(pem: pem)
        #expect(try loaded.pem() == pem)
        #expect(loaded.verifyES256(signature: try key.signES256(Array("m".utf8)), message: Array("m".utf8)))
    }

    @Test func textThatIsNotTheRightKindOfPEMIsAnInvalidKey() throws {
        let key = try P256PrivateKey.generate()
        let publicPEM = try key.publicKey.pem()
        let privatePEM = try key.pkcs8PEM()
        for (text, isPrivate) in [("not a key", true), (publicPEM, true), ("", false), (privatePEM, false)] {
            let error = try #require(throws: CryptoError.self) {
                if isPrivate { _ = try P256PrivateKey(pem: text) } else { _ = try P256PublicKey(pem: text) }
            }
            #expect(error.kind == .invalidKey)
            #expect(error.underlying != nil)
        }
    }

    @Test func keyFileErrorsNameThePath() throws {
        let missing = try #require(throws: CryptoError.self) {
            try P256PrivateKey(contentsOfFile: "/nonexistent-herald/AuthKey.p8")
        }
        #expect(missing.kind == .io(errno: ENOENT))
        #expect(missing.description.contains("/nonexistent-herald/AuthKey.p8"))
        try withTemporaryDirectory { dir in
            try SecretFile.write("not a key", to: dir + "/AuthKey.p8")
            let invalid = try #require(throws: CryptoError.self) {
                try P256PrivateKey(contentsOfFile: dir + "/AuthKey.p8")
            }
            #expect(invalid.kind == .invalidKey)
            #expect(invalid.message.hasPrefix(dir + "/AuthKey.p8: "))
        }
    }

    @Test func concurrentSigningWithOneKeyProducesValidSignatures() throws {
        let key = try P256PrivateKey.generate()
        let publicKey = key.publicKey
        let results = Results(count: 64)
        DispatchQueue.concurrentPerform(iterations: 64) { i in
            let message = Array("message \(i)".utf8)
            let ok = (try? key.signES256(message)).map { publicKey.verifyES256(signature: $0, message: message) }
            results.set(i, ok ?? false)
        }
        #expect(results.all)
    }
}
