import COpenSSL
import Testing

@testable import HeraldCrypto

@Suite struct OpenSSLErrorTests {
    /// Leaves an error on this thread's queue, as a failed OpenSSL call does.
    func provokeError() {
        #expect(EVP_PKEY_CTX_new_from_name(nil, "NO-SUCH-ALGORITHM", nil) == nil)
        #expect(ERR_peek_error() != 0)
    }

    @Test func drainTakesTheWholeQueueAndEmptiesIt() {
        provokeError()
        let first = ERR_peek_error()
        let error = OpenSSLError.drain("EVP_PKEY_CTX_new_from_name")
        #expect(error.operation == "EVP_PKEY_CTX_new_from_name")
        #expect(error.code == first)
        #expect(!error.message.isEmpty)
        #expect(ERR_peek_error() == 0)
        #expect(OpenSSLError.drain("again").code == 0)
    }

    @Test func clearQueueDiscardsQueuedErrors() {
        provokeError()
        OpenSSLError.clearQueue()
        #expect(ERR_peek_error() == 0)
    }

    @Test func checkThrowsOnlyOnFailure() throws {
        try checkOpenSSL(true, "fine")
        let value = try checkOpenSSL(Optional(7), "fine")
        #expect(value == 7)
        provokeError()
        let error = try #require(throws: OpenSSLError.self) { try checkOpenSSL(false, "op") }
        #expect(error.operation == "op")
        #expect(error.code != 0)
        #expect(ERR_peek_error() == 0)
        let nilError = try #require(throws: OpenSSLError.self) { try checkOpenSSL(Int?.none, "op2") }
        #expect(nilError.code == 0)
        #expect(nilError.description == "op2 failed")
    }

    @Test func failedKeyLoadsAndVerificationsLeaveTheQueueEmpty() throws {
        let error = try #require(throws: CryptoError.self) { try P256PublicKey(pem: "garbage") }
        #expect(error.underlying?.code != 0)
        #expect(ERR_peek_error() == 0)
        let key = try P256PrivateKey.generate()
        #expect(!key.publicKey.verifyES256(signature: [UInt8](repeating: 7, count: 64), message: [1]))
        #expect(ERR_peek_error() == 0)
    }
}
