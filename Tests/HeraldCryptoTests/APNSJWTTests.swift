import HeraldCore
import Testing

@testable import HeraldCrypto

@Suite struct APNSJWTTests {
    func segments(_ token: String) -> [String] {
        token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
    }

    @Test func headerAndClaimsAreExactlyTheBytesAppleDocuments() throws {
        let key = try P256PrivateKey.generate()
        let token = try APNSJWT.sign(keyID: "ABC123DEFG", teamID: "DEF123GHIJ", issuedAt: 1_437_179_036, key: key)
        let parts = segments(token)
        try #require(parts.count == 3)
        #expect(!token.contains("="))
        let header = try #require(Base64URL.decode(parts[0]))
        let claims = try #require(Base64URL.decode(parts[1]))
        #expect(String(decoding: header, as: UTF8.self) == #"{"alg":"ES256","kid":"ABC123DEFG"}"#)
        #expect(String(decoding: claims, as: UTF8.self) == #"{"iss":"DEF123GHIJ","iat":1437179036}"#)
        let signature = try #require(Base64URL.decode(parts[2]))
        #expect(signature.count == 64)
        #expect(key.publicKey.verifyES256(signature: signature, message: Array((parts[0] + "." + parts[1]).utf8)))
    }

    @Test func parsedTokenExposesFieldsAndVerifies() throws {
        let key = try P256PrivateKey.generate()
        let token = try APNSJWT.sign(keyID: "KEY1234567", teamID: "TEAM123456", issuedAt: 1_767_225_600, key: key)
        let parsed = try #require(ParsedJWT.parse(token))
        #expect(parsed.alg == "ES256")
        #expect(parsed.kid == "KEY1234567")
        #expect(parsed.iss == "TEAM123456")
        #expect(parsed.iat == 1_767_225_600)
        #expect(parsed.signature.count == 64)
        #expect(parsed.verify(with: key.publicKey))
        #expect(!parsed.verify(with: try P256PrivateKey.generate().publicKey))
    }

    @Test func quotesInIdentifiersAreEscapedNotInjected() throws {
        let key = try P256PrivateKey.generate()
        let token = try APNSJWT.sign(keyID: #"a"b"#, teamID: #"t\"#, issuedAt: 1, key: key)
        let parsed = try #require(ParsedJWT.parse(token))
        #expect(parsed.kid == #"a"b"#)
        #expect(parsed.iss == #"t\"#)
        #expect(parsed.header.objectValue?.count == 2)
    }

    @Test func swappedClaimsFailVerification() throws {
        let key = try P256PrivateKey.generate()
        let token = try APNSJWT.sign(keyID: "K", teamID: "T", issuedAt: 100, key: key)
        let parts = segments(token)
        let forged = parts[0] + "." + Base64URL.encode(Array(#"{"iss":"T","iat":999}"#.utf8)) + "." + parts[2]
        let parsed = try #require(ParsedJWT.parse(forged))
        #expect(parsed.iat == 999)
        #expect(!parsed.verify(with: key.publicKey))
    }

    @Test func tokenNamingAnotherAlgorithmDoesNotVerify() throws {
        let key = try P256PrivateKey.generate()
        let input =
            Base64URL.encode(Array(#"{"alg":"HS256","kid":"K"}"#.utf8)) + "."
            + Base64URL.encode(Array(#"{"iss":"T","iat":1}"#.utf8))
        let signature = try key.signES256(Array(input.utf8))  // a valid ES256 signature all the same
        let parsed = try #require(ParsedJWT.parse(input + "." + Base64URL.encode(signature)))
        #expect(parsed.alg == "HS256")
        #expect(!parsed.verify(with: key.publicKey))
    }

    @Test func malformedTokensDoNotParse() throws {
        let header = Base64URL.encode(Array(#"{"alg":"ES256"}"#.utf8))
        let claims = Base64URL.encode(Array(#"{"iat":1}"#.utf8))
        let signature = Base64URL.encode([UInt8](repeating: 1, count: 64))
        #expect(ParsedJWT.parse([header, claims, signature].joined(separator: ".")) != nil)
        #expect(ParsedJWT.parse([header, claims].joined(separator: ".")) == nil)
        #expect(ParsedJWT.parse([header, claims, signature, signature].joined(separator: ".")) == nil)
        #expect(ParsedJWT.parse([header + "=", claims, signature].joined(separator: ".")) == nil)
        #expect(ParsedJWT.parse([header, claims, signature + "!"].joined(separator: ".")) == nil)
        for badHeader in ["not json", "[1]"] {
            let encoded = Base64URL.encode(Array(badHeader.utf8))
            #expect(ParsedJWT.parse([encoded, claims, signature].joined(separator: ".")) == nil)
        }
        #expect(ParsedJWT.parse([header, Base64URL.encode(Array("42".utf8)), signature].joined(separator: ".")) == nil)
        #expect(ParsedJWT.parse("") == nil)
    }

    @Test func iatIsOnlyReadWhenItIsAnInteger() throws {
        let header = Base64URL.encode(Array(#"{"alg":"ES256"}"#.utf8))
        for (claims, expected) in [(#"{"iat":"123"}"#, nil), (#"{"iat":1.5}"#, nil), (#"{"iat":123}"#, 123 as Int64?)] {
            let parsed = try #require(ParsedJWT.parse(header + "." + Base64URL.encode(Array(claims.utf8)) + "."))
            #expect(parsed.iat == expected)
        }
    }
}
