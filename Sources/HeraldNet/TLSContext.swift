import COpenSSL
import CSystem
import Foundation
import Glibc
import HeraldCore
import HeraldCrypto

/// An OpenSSL `SSL_CTX` configured for HTTP/2: TLS 1.2+, ALPN `h2` (reference §1.2).
///
/// `@unchecked Sendable`: the context is configured once in `init` and only read
/// afterwards (OpenSSL allows creating connections from a shared context on any thread).
public final class TLSContext: @unchecked Sendable {
    let ctx: OpaquePointer
    public let isServer: Bool

    private init(ctx: OpaquePointer, isServer: Bool) {
        self.ctx = ctx
        self.isServer = isServer
    }

    deinit { SSL_CTX_free(ctx) }

    /// A client context that verifies the server: against `caFile` (PEM) when given (the
    /// simulator's certificate), else the system trust store. Throws `NetError.tls`.
    public static func client(caFile: String? = nil) throws -> TLSContext {
        guard let ctx = SSL_CTX_new(TLS_client_method()) else { throw NetError.tls(.openSSL(OpenSSLError.drain("SSL_CTX_new"))) }
        let c = TLSContext(ctx: ctx, isServer: false)
        try c.common()
        if let caFile {
            guard SSL_CTX_load_verify_locations(ctx, caFile, nil) == 1 else {
                throw NetError.tls(.file(path: caFile, OpenSSLError.drain("SSL_CTX_load_verify_locations")))
            }
        } else {
            guard SSL_CTX_set_default_verify_paths(ctx) == 1 else {
                throw NetError.tls(.openSSL(OpenSSLError.drain("SSL_CTX_set_default_verify_paths")))
            }
        }
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nil)
        // TLS 1.3 suites with AES-128-GCM first (as nghttp2's own tools and browsers order
        // them), where OpenSSL's default puts AES-256-GCM first: a server that follows the
        // client's order then encrypts every record with 10 AES rounds, not 14 (~300
        // instructions per push, issue #12). All three are TLS 1.3's standard suites.
        guard SSL_CTX_set_ciphersuites(ctx, "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256") == 1 else {
            throw NetError.tls(.openSSL(OpenSSLError.drain("SSL_CTX_set_ciphersuites")))
        }
        // ALPN protocol list in wire format: length-prefixed "h2".
        let protos: [UInt8] = [2, UInt8(ascii: "h"), UInt8(ascii: "2")]
        // Note: returns 0 on success, unlike most OpenSSL calls (interop notes §9).
        guard SSL_CTX_set_alpn_protos(ctx, protos, UInt32(protos.count)) == 0 else {
            throw NetError.tls(.openSSL(OpenSSLError.drain("SSL_CTX_set_alpn_protos")))
        }
        return c
    }

    /// A server context from PEM files. Throws `NetError.tls` naming the file at fault.
    public static func server(certificateChainFile: String, privateKeyFile: String) throws -> TLSContext {
        guard let ctx = SSL_CTX_new(TLS_server_method()) else { throw NetError.tls(.openSSL(OpenSSLError.drain("SSL_CTX_new"))) }
        let c = TLSContext(ctx: ctx, isServer: true)
        try c.common()
        guard SSL_CTX_use_certificate_chain_file(ctx, certificateChainFile) == 1 else {
            throw NetError.tls(.file(path: certificateChainFile, OpenSSLError.drain("SSL_CTX_use_certificate_chain_file")))
        }
        // The key file's contents are never logged, only its path.
        guard SSL_CTX_use_PrivateKey_file(ctx, privateKeyFile, SSL_FILETYPE_PEM) == 1 else {
            throw NetError.tls(.file(path: privateKeyFile, OpenSSLError.drain("SSL_CTX_use_PrivateKey_file")))
        }
        guard SSL_CTX_check_private_key(ctx) == 1 else {
            throw NetError.tls(.keyMismatch)
        }
        SSL_CTX_set_alpn_select_cb(ctx, alpnSelectH2, nil)
        return c
    }

    private func common() throws {
        guard herald_SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) == 1 else {
            throw NetError.tls(.openSSL(OpenSSLError.drain("SSL_CTX_set_min_proto_version")))
        }
        _ = herald_SSL_CTX_set_mode(ctx, herald_SSL_MODE_partial_moving())
        // HTTP/2 forbids TLS compression and renegotiation (RFC 9113 §9.2).
        _ = herald_SSL_CTX_set_options(ctx, herald_SSL_OP_http2())
    }
}

/// Server-side ALPN: pick `h2` or refuse the handshake (APNs speaks only HTTP/2).
private let alpnSelectH2:
    @convention(c) (
        OpaquePointer?, UnsafeMutablePointer<UnsafePointer<UInt8>?>?, UnsafeMutablePointer<UInt8>?,
        UnsafePointer<UInt8>?, UInt32, UnsafeMutableRawPointer?
    ) -> Int32 = { _, out, outlen, input, inlen, _ in
        guard let input, let out, let outlen else { return 3 }  // SSL_TLSEXT_ERR_NOACK
        var i = 0
        let n = Int(inlen)
        while i < n {
            let len = Int(input[i])
            if len == 2 && i + 2 < n && input[i + 1] == UInt8(ascii: "h") && input[i + 2] == UInt8(ascii: "2") {
                out.pointee = input + i + 1
                outlen.pointee = 2
                return 0  // SSL_TLSEXT_ERR_OK
            }
            i += 1 + len
        }
        return 2  // SSL_TLSEXT_ERR_ALERT_FATAL: no_application_protocol
    }
