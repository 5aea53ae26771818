import HeraldCore
import Testing

@testable import HeraldCrypto

@Suite struct DigestTests {
    @Test func sha256MatchesFIPSVectors() {
        #expect(
            Hex.encode(Digest.sha256(Array("abc".utf8)))
                == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(
            Hex.encode(Digest.sha256([UInt8]()))
                == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        // A collection without contiguous storage hashes the same as its bytes.
        #expect(Digest.sha256("abc".utf8.lazy.map { $0 }) == Digest.sha256(Array("abc".utf8)))
    }

    @Test func hmacSHA256MatchesRFC4231TestCase2() {
        let mac = Digest.hmacSHA256(key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8))
        #expect(Hex.encode(mac) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }

    @Test func hmacSHA256AcceptsAnEmptyKeyAndMessage() {
        #expect(
            Hex.encode(Digest.hmacSHA256(key: [], message: [UInt8]()))
                == "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad")
    }

    @Test func constantTimeEqualsComparesContentAndLength() {
        let a: [UInt8] = [1, 2, 3, 4]
        #expect(constantTimeEquals(a, [1, 2, 3, 4]))
        #expect(!constantTimeEquals(a, [1, 2, 3, 5]))
        #expect(!constantTimeEquals(a, [0, 2, 3, 4]))
        #expect(!constantTimeEquals(a, [1, 2, 3]))
        #expect(!constantTimeEquals(a, [1, 2, 3, 4, 5]))
        #expect(constantTimeEquals([], []))
        #expect(!constantTimeEquals([], [0]))
    }

    @Test func secureRandomGivesFreshBytesAndURLSafeTokens() throws {
        #expect(SecureRandom.bytes(0).isEmpty)
        let a = SecureRandom.bytes(32)
        let b = SecureRandom.bytes(32)
        #expect(a.count == 32)
        #expect(a != b)
        let token = SecureRandom.token(bytes: 32)
        #expect(token.count == 43)
        #expect(try #require(Base64URL.decode(token)).count == 32)
    }
}
