import Testing

@testable import HeraldCrypto

@Suite struct SelfSignedCertificateTests {
    func makeCertificate(in dir: String, key: P256PrivateKey, days: Int = 30) throws {
        let pem = try SelfSignedCertificate.generate(
            key: key, commonName: "Herald APNs simulator", dnsNames: ["localhost", "api.sandbox.push.test"],
            ipAddresses: ["127.0.0.1", "::1"], validDays: days)
        #expect(pem.hasPrefix("-----BEGIN CERTIFICATE-----\n"))
        try SecretFile.write(pem, to: dir + "/cert.pem")
    }

    @Test func certificateNamesEveryDNSNameAndIPAddress() throws {
        try withTemporaryDirectory { dir in
            try makeCertificate(in: dir, key: try P256PrivateKey.generate())
            let san = try openssl(["x509", "-in", "cert.pem", "-noout", "-ext", "subjectAltName"], in: dir)
            try #require(san.status == 0, "\(san.errors)")
            #expect(san.output.contains("DNS:localhost"))
            #expect(san.output.contains("DNS:api.sandbox.push.test"))
            #expect(san.output.contains("IP Address:127.0.0.1"))
            #expect(san.output.contains("IP Address:0:0:0:0:0:0:0:1"))
        }
    }

    @Test func certificateVerifiesAsItsOwnCAForServerUse() throws {
        try withTemporaryDirectory { dir in
            try makeCertificate(in: dir, key: try P256PrivateKey.generate())
            let verify = try openssl(["verify", "-CAfile", "cert.pem", "cert.pem"], in: dir)
            #expect(verify.status == 0)
            #expect(verify.output.contains("cert.pem: OK"))
            let server = try openssl(
                ["verify", "-purpose", "sslserver", "-verify_hostname", "localhost", "-CAfile", "cert.pem", "cert.pem"],
                in: dir)
            #expect(server.status == 0, "\(server.output)\(server.errors)")
            let wrongHost = try openssl(
                ["verify", "-verify_hostname", "example.com", "-CAfile", "cert.pem", "cert.pem"], in: dir)
            #expect(wrongHost.status != 0)
        }
    }

    @Test func certificateCarriesTheRequestedExtensionsKeyAndValidity() throws {
        try withTemporaryDirectory { dir in
            let key = try P256PrivateKey.generate()
            try makeCertificate(in: dir, key: key, days: 30)
            let ext = try openssl(
                ["x509", "-in", "cert.pem", "-noout", "-ext", "basicConstraints,keyUsage,extendedKeyUsage"], in: dir)
            try #require(ext.status == 0, "\(ext.errors)")
            #expect(ext.output.contains("X509v3 Basic Constraints: critical\n    CA:TRUE"))
            #expect(ext.output.contains("Digital Signature, Certificate Sign"))
            #expect(ext.output.contains("TLS Web Server Authentication"))
            let text = try openssl(["x509", "-in", "cert.pem", "-noout", "-text"], in: dir)
            #expect(text.output.contains("Version: 3 (0x2)"))
            #expect(text.output.contains("Signature Algorithm: ecdsa-with-SHA256"))
            #expect(text.output.contains("Subject: CN = Herald APNs simulator"))
            let pub = try openssl(["x509", "-in", "cert.pem", "-noout", "-pubkey"], in: dir)
            #expect(pub.output == (try key.publicKey.pem()))
            let within = try openssl(["x509", "-in", "cert.pem", "-noout", "-checkend", String(29 * 86400)], in: dir)
            #expect(within.status == 0)
            let beyond = try openssl(["x509", "-in", "cert.pem", "-noout", "-checkend", String(31 * 86400)], in: dir)
            #expect(beyond.status != 0)
        }
    }

    @Test func serialsAreRandom() throws {
        let key = try P256PrivateKey.generate()
        let serials = try (0..<2).map { _ in
            try withTemporaryDirectory { dir in
                try makeCertificate(in: dir, key: key)
                return try openssl(["x509", "-in", "cert.pem", "-noout", "-serial"], in: dir).output
            }
        }
        #expect(serials[0].hasPrefix("serial="))
        #expect(serials[0] != serials[1])
    }

    @Test func invalidNamesAndDurationsAreRefused() throws {
        let key = try P256PrivateKey.generate()
        let cases: [([String], [String], Int)] = [
            (["a,IP:10.0.0.1"], [], 1), (["@section"], [], 1), ([""], [], 1), (["a b"], [], 1),
            ([], ["1.2.3"], 1), ([], ["fe80::1%eth0"], 1), ([], ["localhost"], 1),
            (["localhost"], [], 0), (["localhost"], [], 40000),
        ]
        for (dns, ips, days) in cases {
            let error = try #require(throws: CryptoError.self) {
                try SelfSignedCertificate.generate(
                    key: key, commonName: "x", dnsNames: dns, ipAddresses: ips, validDays: days)
            }
            #expect(error.kind == .invalidArgument)
        }
    }
}
