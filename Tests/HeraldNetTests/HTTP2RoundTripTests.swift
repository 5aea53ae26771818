import Foundation
import Testing

@testable import HeraldCore
@testable import HeraldNet

/// An echo server: answers 200 with the request's path and body.
final class EchoServer: HTTP2ServerDelegate, @unchecked Sendable {
    let received = Locked(0)
    func http2Server(_ c: HTTP2ServerConnection, received r: HTTP2ServerRequest) {
        received.withLock { $0 += 1 }
        var h = HeaderList()
        h.append("x-path", r.path)
        c.respond(streamID: r.streamID, status: 200, headers: h, body: r.body)
    }
    func http2ServerClosed(_ c: HTTP2ServerConnection, error: NetError?) {}
}

/// Collects client events and signals when `expected` streams have ended.
final class Collector: HTTP2ClientDelegate, @unchecked Sendable {
    let lock = NSLock()
    var results: [Int: Result<HTTP2Response, HTTP2StreamFailure>] = [:]
    var ready = DispatchSemaphore(value: 0)
    var done = DispatchSemaphore(value: 0)
    var expected = 0
    var closedError: NetError?? = nil

    func http2Ready(_ c: HTTP2ClientConnection) { ready.signal() }
    func http2(_ c: HTTP2ClientConnection, completed tag: Int, result: consuming Result<HTTP2Response, HTTP2StreamFailure>) {
        lock.lock()
        results[tag] = result
        let finished = results.count == expected
        lock.unlock()
        if finished { done.signal() }
    }
    func http2SettingsChanged(_ c: HTTP2ClientConnection) {}
    func http2GoAway(_ c: HTTP2ClientConnection, lastStreamID: Int32, errorCode: UInt32, debugData: [UInt8]) {}
    func http2Closed(_ c: HTTP2ClientConnection, error: NetError?) {
        lock.lock()
        closedError = .some(error)
        lock.unlock()
        ready.signal()
    }
}

@Suite struct HTTP2RoundTripTests {
    @Test func thousandConcurrentStreamsRoundTripOverTLS() throws {
        let serverLoop = try EventLoop(name: "server")
        let clientLoop = try EventLoop(name: "client")
        defer {
            clientLoop.shutdown()
            serverLoop.shutdown()
        }
        let echo = EchoServer()
        let listener = try HTTP2Listener(
            host: "127.0.0.1", port: 0, loops: [serverLoop],
            tls: try TLSContext.server(certificateChainFile: TestCertificate.cert, privateKeyFile: TestCertificate.key),
            config: HTTP2ServerConfig(), logger: .discard, delegate: { echo })
        listener.start()
        defer { listener.stop() }

        let collector = Collector()
        collector.expected = 1000
        let conn = HTTP2ClientConnection(
            loop: clientLoop, target: HostPort(host: "127.0.0.1", port: listener.address.port),
            tls: try TLSContext.client(caFile: TestCertificate.cert), config: HTTP2ClientConfig())
        conn.delegate = collector
        clientLoop.execute { conn.connect() }
        collector.ready.wait()
        #expect(conn.state == .ready)
        let body = HTTP2Body(Array(repeating: UInt8(ascii: "x"), count: 300))
        clientLoop.execute {
            for i in 0..<1000 {
                _ = conn.submit(HTTP2Request(method: "POST", path: "/p/\(i)", body: body), tag: i)
            }
            conn.flush()
        }
        collector.done.wait()
        #expect(collector.results.count == 1000)
        for (i, r) in collector.results {
            let resp = try r.get()
            #expect(resp.status == 200)
            #expect(resp.header("x-path") == "/p/\(i)")
            #expect(resp.body.count == 300)
        }
        #expect(echo.received.withLock { $0 } == 1000)
        clientLoop.execute { conn.close() }
    }

    @Test func untrustedCertificateFailsTheHandshake() throws {
        let serverLoop = try EventLoop(name: "server")
        let clientLoop = try EventLoop(name: "client")
        defer {
            clientLoop.shutdown()
            serverLoop.shutdown()
        }
        let listener = try HTTP2Listener(
            host: "127.0.0.1", port: 0, loops: [serverLoop],
            tls: try TLSContext.server(certificateChainFile: TestCertificate.cert, privateKeyFile: TestCertificate.key),
            config: HTTP2ServerConfig(), logger: .discard, delegate: { EchoServer() })
        listener.start()
        defer { listener.stop() }
        let collector = Collector()
        // The system trust store does not know the test certificate.
        let conn = HTTP2ClientConnection(
            loop: clientLoop, target: HostPort(host: "127.0.0.1", port: listener.address.port),
            tls: try TLSContext.client(), config: HTTP2ClientConfig())
        conn.delegate = collector
        clientLoop.execute { conn.connect() }
        collector.ready.wait()
        guard case .some(.some(.tls(let failure))) = collector.closedError else {
            Issue.record("expected a TLS error, got \(String(describing: collector.closedError))")
            return
        }
        #expect(failure.description.contains("certificate"))
        // X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY (20) or DEPTH_ZERO_SELF_SIGNED_CERT (18).
        guard case .certificate(let code, _, _) = failure else {
            Issue.record("expected a certificate failure, got \(failure)")
            return
        }
        #expect(code == 18 || code == 20)
    }
}
