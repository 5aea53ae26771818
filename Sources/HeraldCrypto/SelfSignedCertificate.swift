import COpenSSL

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Self-signed X.509 certificates for the APNs simulator's TLS listener.
public enum SelfSignedCertificate {
    /// A PEM X.509v3 certificate for `key`, self-signed with ECDSA/SHA-256: random 128-bit
    /// serial, valid from an hour ago (clock skew) for `validDays` days, subject and issuer
    /// `CN=<commonName>`, subjectAltName with every DNS name and IP address (v4 or v6).
    /// It is also its own CA (basicConstraints critical CA:TRUE, keyUsage digitalSignature
    /// and keyCertSign), so a client can take the same file as its CA file; extendedKeyUsage
    /// serverAuth. Any thread.
    /// - Throws: `CryptoError` `.invalidArgument` for a DNS name outside
    ///   `[A-Za-z0-9.*_-]`, an unparsable IP address or `validDays` outside 1...36500;
    ///   `OpenSSLError` when OpenSSL refuses a step (a common name over 64 bytes, say).
    public static func generate(
        key: P256PrivateKey, commonName: String, dnsNames: [String], ipAddresses: [String], validDays: Int
    ) throws -> String {
        guard (1...36500).contains(validDays) else {
            throw CryptoError(.invalidArgument, "validDays must be between 1 and 36500, got \(validDays)")
        }
        let altNames = try subjectAltName(dnsNames: dnsNames, ipAddresses: ipAddresses)
        OpenSSLError.clearQueue()

        let x509 = try checkOpenSSL(X509_new(), "X509_new")
        defer { X509_free(x509) }
        try checkOpenSSL(X509_set_version(x509, Int(X509_VERSION_3)) == 1, "X509_set_version")
        try setRandomSerial(x509)
        try checkOpenSSL(X509_gmtime_adj(X509_getm_notBefore(x509), -3600) != nil, "X509_gmtime_adj")
        try checkOpenSSL(
            X509_time_adj_ex(X509_getm_notAfter(x509), Int32(validDays), 0, nil) != nil, "X509_time_adj_ex")
        try checkOpenSSL(X509_set_pubkey(x509, key.evpPKey) == 1, "X509_set_pubkey")

        let name = try checkOpenSSL(X509_NAME_new(), "X509_NAME_new")
        defer { X509_NAME_free(name) }
        let cn = Array(commonName.utf8)
        try checkOpenSSL(
            X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, cn, Int32(cn.count), -1, 0) == 1,
            "X509_NAME_add_entry_by_txt(CN)")
        try checkOpenSSL(X509_set_subject_name(x509, name) == 1, "X509_set_subject_name")
        try checkOpenSSL(X509_set_issuer_name(x509, name) == 1, "X509_set_issuer_name")

        var ctx = X509V3_CTX()
        X509V3_set_ctx(&ctx, x509, x509, nil, nil, 0)
        var extensions: [(Int32, String)] = [
            (NID_basic_constraints, "critical,CA:TRUE"),
            (NID_key_usage, "critical,digitalSignature,keyCertSign"),
            (NID_ext_key_usage, "serverAuth"),
            (NID_subject_key_identifier, "hash"),
        ]
        if let altNames { extensions.append((NID_subject_alt_name, altNames)) }
        for (nid, value) in extensions {
            let ext = try checkOpenSSL(X509V3_EXT_conf_nid(nil, &ctx, nid, value), "X509V3_EXT_conf_nid(\(value))")
            defer { X509_EXTENSION_free(ext) }
            try checkOpenSSL(X509_add_ext(x509, ext, -1) == 1, "X509_add_ext")
        }

        try checkOpenSSL(X509_sign(x509, key.evpPKey, EVP_sha256()) > 0, "X509_sign")
        let bio = try MemoryBIO()
        try checkOpenSSL(PEM_write_bio_X509(bio.bio, x509) == 1, "PEM_write_bio_X509")
        return bio.text()
    }

    /// The subjectAltName value in OpenSSL's configuration syntax ("DNS:a,IP:::1"), nil when
    /// there are no names. Every name is validated first, so none can inject a "," or an
    /// "@section" into that syntax.
    static func subjectAltName(dnsNames: [String], ipAddresses: [String]) throws(CryptoError) -> String? {
        var entries: [String] = []
        for dns in dnsNames {
            guard isDNSName(dns) else {
                throw CryptoError(.invalidArgument, "\"\(dns)\" is not a DNS name")
            }
            entries.append("DNS:" + dns)
        }
        for ip in ipAddresses {
            guard isIPAddress(ip) else {
                throw CryptoError(.invalidArgument, "\"\(ip)\" is not an IPv4 or IPv6 address")
            }
            entries.append("IP:" + ip)
        }
        return entries.isEmpty ? nil : entries.joined(separator: ",")
    }

    static func isDNSName(_ name: String) -> Bool {
        guard !name.isEmpty, name.utf8.count <= 253 else { return false }
        return name.utf8.allSatisfy { c in
            switch c {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "-"),
                UInt8(ascii: "_"), UInt8(ascii: "*"):
                true
            default: false
            }
        }
    }

    static func isIPAddress(_ text: String) -> Bool {
        var v6 = in6_addr()
        var v4 = in_addr()
        return inet_pton(AF_INET, text, &v4) == 1 || inet_pton(AF_INET6, text, &v6) == 1
    }

    /// 16 random bytes with the top bit clear (a positive INTEGER, RFC 5280 §4.1.2.2) and
    /// the next one set (so the serial is never zero and always 16 bytes long).
    private static func setRandomSerial(_ x509: OpaquePointer) throws(OpenSSLError) {
        var bytes = SecureRandom.bytes(16)
        bytes[0] = (bytes[0] & 0x7f) | 0x40
        let bn = try checkOpenSSL(BN_bin2bn(bytes, Int32(bytes.count), nil), "BN_bin2bn")
        defer { BN_free(bn) }
        try checkOpenSSL(BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x509)) != nil, "BN_to_ASN1_INTEGER")
    }
}
