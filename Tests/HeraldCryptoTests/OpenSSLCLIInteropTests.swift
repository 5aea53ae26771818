import Testing

@testable import HeraldCrypto

/// Keys and signatures exchanged with the `openssl` command-line tool, so that a mistake
/// shared by our signer and our verifier cannot pass unnoticed.
@Suite struct OpenSSLCLIInteropTests {
    /// `openssl ecparam -name prime256v1 -genkey -noout | openssl pkcs8 -topk8 -nocrypt`,
    /// through files: ec.pem (SEC1) and key.p8 (PKCS#8, Apple's .p8 form).
    func makeCLIKey(in dir: String) throws {
        let ec = try openssl(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "ec.pem"], in: dir)
        try #require(ec.status == 0, "\(ec.errors)")
        let p8 = try openssl(["pkcs8", "-topk8", "-nocrypt", "-in", "ec.pem", "-out", "key.p8"], in: dir)
        try #require(p8.status == 0, "\(p8.errors)")
    }

    @Test func cliP8KeyLoadsAndItsSignatureVerifiesWithOpenSSLDgst() throws {
        try withTemporaryDirectory { dir in
            try makeCLIKey(in: dir)
            #expect(try readText(dir + "/key.p8").hasPrefix("-----BEGIN PRIVATE KEY-----"))
            let key = try P256PrivateKey(contentsOfFile: dir + "/key.p8")

            let pub = try openssl(["pkey", "-in", "key.p8", "-pubout", "-out", "pub.pem"], in: dir)
            try #require(pub.status == 0, "\(pub.errors)")
            #expect(try key.publicKey.pem() == readText(dir + "/pub.pem"))

            let message = Array(#"{"alg":"ES256"}.{"iat":1}"#.utf8)
            let signature = try key.signES256(message)
            try writeBytes(message, dir + "/msg.bin")
            try writeBytes(try #require(ECDSASignature.der(fromRaw: signature)), dir + "/sig.der")
            let verify = try openssl(
                ["dgst", "-sha256", "-verify", "pub.pem", "-signature", "sig.der", "msg.bin"], in: dir)
            #expect(verify.status == 0)
            #expect(verify.output.contains("Verified OK"))

            var tampered = message
            tampered[0] ^= 1
            try writeBytes(tampered, dir + "/msg.bin")
            let refused = try openssl(
                ["dgst", "-sha256", "-verify", "pub.pem", "-signature", "sig.der", "msg.bin"], in: dir)
            #expect(refused.status != 0)
        }
    }

    @Test func openSSLSignatureVerifiesWithOurPublicKey() throws {
        try withTemporaryDirectory { dir in
            try makeCLIKey(in: dir)
            try writeBytes(Array("from the cli".utf8), dir + "/msg.bin")
            let sign = try openssl(["dgst", "-sha256", "-sign", "key.p8", "-out", "sig.der", "msg.bin"], in: dir)
            try #require(sign.status == 0, "\(sign.errors)")
            let raw = try #require(ECDSASignature.raw(fromDER: readBytes(dir + "/sig.der")))
            let key = try P256PrivateKey(contentsOfFile: dir + "/key.p8")
            #expect(key.publicKey.verifyES256(signature: raw, message: Array("from the cli".utf8)))
        }
    }

    @Test func sec1ECPrivateKeyLoadsAsTheSameKey() throws {
        try withTemporaryDirectory { dir in
            try makeCLIKey(in: dir)
            #expect(try readText(dir + "/ec.pem").hasPrefix("-----BEGIN EC PRIVATE KEY-----"))
            let sec1 = try P256PrivateKey(contentsOfFile: dir + "/ec.pem")
            let p8 = try P256PrivateKey(contentsOfFile: dir + "/key.p8")
            #expect(try sec1.publicKey.pem() == p8.publicKey.pem())
        }
    }

    @Test func rsaKeysAreRefusedAsUnsupported() throws {
        try withTemporaryDirectory { dir in
            let gen = try openssl(
                ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1024", "-out", "rsa.pem"], in: dir)
            try #require(gen.status == 0, "\(gen.errors)")
            let pub = try openssl(["pkey", "-in", "rsa.pem", "-pubout", "-out", "rsa.pub"], in: dir)
            try #require(pub.status == 0, "\(pub.errors)")
            let error = try #require(throws: CryptoError.self) { try P256PrivateKey(pem: readText(dir + "/rsa.pem")) }
            #expect(error.kind == .unsupportedKey)
            let publicError = try #require(throws: CryptoError.self) {
                try P256PublicKey(pem: readText(dir + "/rsa.pub"))
            }
            #expect(publicError.kind == .unsupportedKey)
        }
    }

    @Test func keysOnOtherCurvesAreRefusedAsUnsupported() throws {
        try withTemporaryDirectory { dir in
            let gen = try openssl(["ecparam", "-name", "secp384r1", "-genkey", "-noout", "-out", "p384.pem"], in: dir)
            try #require(gen.status == 0, "\(gen.errors)")
            let error = try #require(throws: CryptoError.self) { try P256PrivateKey(pem: readText(dir + "/p384.pem")) }
            #expect(error.kind == .unsupportedKey)
        }
    }

    @Test func encryptedP8IsRefusedWithoutPrompting() throws {
        try withTemporaryDirectory { dir in
            try makeCLIKey(in: dir)
            let enc = try openssl(
                ["pkcs8", "-topk8", "-in", "ec.pem", "-passout", "pass:secret", "-out", "enc.p8"], in: dir)
            try #require(enc.status == 0, "\(enc.errors)")
            #expect(try readText(dir + "/enc.p8").hasPrefix("-----BEGIN ENCRYPTED PRIVATE KEY-----"))
            let error = try #require(throws: CryptoError.self) {
                try P256PrivateKey(contentsOfFile: dir + "/enc.p8")
            }
            #expect(error.kind == .invalidKey)
        }
    }
}
