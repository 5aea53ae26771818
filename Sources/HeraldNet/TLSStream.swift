import COpenSSL
import CSystem
import Foundation
import Glibc
import HeraldCore
import HeraldCrypto

/// One TLS connection over a non-blocking socket. Owns the socket and the `SSL`.
/// Confined to one thread (its event loop).
final class TLSStream {
    enum Status {
        case done(Int)  // bytes moved (0 for a completed handshake)
        case wantRead
        case wantWrite
        case eof
        case failed(TLSFailure)
    }

    let fd: Int32
    let ssl: OpaquePointer
    private(set) var closed = false

    /// Wraps `fd` (already connected or accepted). `serverName` is verified against the
    /// certificate (DNS name or IP address) and sent as SNI when it is a name.
    init(fd: Int32, context: TLSContext, serverName: String?) throws {
        guard let ssl = SSL_new(context.ctx) else { throw NetError.tls(.openSSL(OpenSSLError.drain("SSL_new"))) }
        self.ssl = ssl
        self.fd = fd
        SSL_set_fd(ssl, fd)
        if context.isServer {
            SSL_set_accept_state(ssl)
        } else {
            SSL_set_connect_state(ssl)
            if let name = serverName {
                if Self.isIPAddress(name) {
                    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name)
                } else {
                    _ = herald_SSL_set_tlsext_host_name(ssl, name)
                    SSL_set1_host(ssl, name)
                }
            }
        }
    }

    deinit {
        SSL_free(ssl)
        if !closed { Sys.close(fd) }
    }

    static func isIPAddress(_ s: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, s, &v4) == 1 || inet_pton(AF_INET6, s, &v6) == 1
    }

    private func status(_ rc: Int32, _ op: String) -> Status {
        if rc > 0 { return .done(Int(rc)) }
        let err = SSL_get_error(ssl, rc)
        switch err {
        case SSL_ERROR_WANT_READ: return .wantRead
        case SSL_ERROR_WANT_WRITE: return .wantWrite
        case SSL_ERROR_ZERO_RETURN: return .eof
        case SSL_ERROR_SYSCALL:
            let e = errno
            let q = OpenSSLError.drain(op)
            if rc == 0 || e == 0 || e == ECONNRESET || e == EPIPE { return .eof }
            return .failed(.system(errno: e, q))
        default:
            let q = OpenSSLError.drain(op)
            let v = SSL_get_verify_result(ssl)
            if v != X509_V_OK { return .failed(.certificate(code: Int(v), reason: String(cString: X509_verify_cert_error_string(v)), q)) }
            return .failed(.openSSL(q))
        }
    }

    func handshake() -> Status {
        OpenSSLError.clearQueue()
        let rc = SSL_do_handshake(ssl)
        if rc == 1 { return .done(0) }
        return status(rc, "SSL_do_handshake")
    }

    /// The protocol ALPN selected, if any.
    var alpn: String? {
        var p: UnsafePointer<UInt8>?
        var n: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &p, &n)
        guard let p, n > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: p, count: Int(n)), as: UTF8.self)
    }

    func read(into buf: UnsafeMutableRawBufferPointer) -> Status {
        OpenSSLError.clearQueue()
        return status(SSL_read(ssl, buf.baseAddress, Int32(buf.count)), "SSL_read")
    }

    func write(_ buf: UnsafeRawBufferPointer) -> Status {
        OpenSSLError.clearQueue()
        return status(SSL_write(ssl, buf.baseAddress, Int32(buf.count)), "SSL_write")
    }

    /// Best-effort close_notify, then closes the socket.
    func close(sendCloseNotify: Bool = true) {
        guard !closed else { return }
        OpenSSLError.clearQueue()
        if sendCloseNotify { _ = SSL_shutdown(ssl) }
        OpenSSLError.clearQueue()
        closed = true
        Sys.close(fd)
    }
}
