import Foundation
import Testing

@testable import HeraldCore
@testable import HeraldNet

/// A server that answers the first request and then stops reading (so PINGs go unanswered).
final class GoesDeaf: HTTP2ServerDelegate, @unchecked Sendable {
    func http2Server(_ c: HTTP2ServerConnection, received r: HTTP2ServerRequest) {
        c.respond(streamID: r.streamID, status: 200)
        c.pauseReading(for: 60)
    }
    func http2ServerClosed(_ c: HTTP2ServerConnection, error: NetError?) {}
}

/// Starts a TLS HTTP/2 listener on 127.0.0.1:0 answering with `delegate`.
func startListener(on loop: EventLoop, _ delegate: HTTP2ServerDelegate) throws -> HTTP2Listener {
    let box = UncheckedBox(delegate)
    let listener = try HTTP2Listener(
        host: "127.0.0.1", port: 0, loops: [loop],
        tls: try TLSContext.server(certificateChainFile: TestCertificate.cert, privateKeyFile: TestCertificate.key),
        config: HTTP2ServerConfig(), logger: .discard, delegate: { box.value })
    listener.start()
    return listener
}

/// A client connection to `listener` with `config`, reporting to `collector`; connected.
func connectClient(on loop: EventLoop, to listener: HTTP2Listener, config: HTTP2ClientConfig, collector: Collector) throws
    -> HTTP2ClientConnection
{
    let conn = HTTP2ClientConnection(
        loop: loop, target: HostPort(host: "127.0.0.1", port: listener.address.port),
        tls: try TLSContext.client(caFile: TestCertificate.cert), config: config)
    conn.delegate = collector
    loop.execute { conn.connect() }
    collector.ready.wait()
    return conn
}

@Suite struct DeadlineTests {
    @Test func aTLSPeerThatNeverAnswersTimesOutTheHandshake() throws {
        // A TCP listener that accepts and then says nothing.
        let (fd, addr) = try Socket.listen(host: "127.0.0.1", port: 0)
        defer { close(fd) }
        let loop = try EventLoop(name: "client")
        defer { loop.shutdown() }
        var config = HTTP2ClientConfig()
        config.handshakeTimeout = 0.3
        let collector = Collector()
        let conn = HTTP2ClientConnection(
            loop: loop, target: HostPort(host: "127.0.0.1", port: addr.port),
            tls: try TLSContext.client(caFile: TestCertificate.cert), config: config)
        conn.delegate = collector
        let start = Date()
        loop.execute { conn.connect() }
        collector.ready.wait()
        #expect(collector.closedError == .some(.some(.timeout("TLS handshake"))))
        #expect(Date().timeIntervalSince(start) < 5)
    }

    /// Runs one GET from a client with `config` against a listener answering with
    /// `server`, waits for the stream's end, then hands over for the checks.
    private func oneRequest(
        to server: HTTP2ServerDelegate, config: HTTP2ClientConfig,
        then check: (Collector, HTTP2ClientConnection, EventLoop) -> Void
    ) throws {
        let serverLoop = try EventLoop(name: "server")
        let loop = try EventLoop(name: "client")
        defer {
            loop.shutdown()
            serverLoop.shutdown()
        }
        let listener = try startListener(on: serverLoop, server)
        defer { listener.stop() }
        let collector = Collector()
        collector.expected = 1
        let conn = try connectClient(on: loop, to: listener, config: config, collector: collector)
        loop.execute {
            _ = conn.submit(HTTP2Request(method: "GET", path: "/"), tag: 0)
            conn.flush()
        }
        collector.done.wait()
        check(collector, conn, loop)
    }

    @Test func anUnansweredPingClosesTheConnection() throws {
        var config = HTTP2ClientConfig()
        config.pingAfterIdle = 0.2
        config.pingTimeout = 0.5
        try oneRequest(to: GoesDeaf(), config: config) { collector, _, _ in
            // Idle now: a PING goes out after 0.2 s, is never answered, and the connection closes.
            collector.ready.wait()
            guard case .some(.some(.timeout(let what))) = collector.closedError else {
                Issue.record("expected a PING timeout, got \(String(describing: collector.closedError))")
                return
            }
            #expect(what.contains("PING"))
        }
    }

    @Test func aStreamWithoutAnAnswerIsResetAndReportedTimedOut() throws {
        final class Silent: HTTP2ServerDelegate, @unchecked Sendable {
            func http2Server(_ c: HTTP2ServerConnection, received r: HTTP2ServerRequest) {}
            func http2ServerClosed(_ c: HTTP2ServerConnection, error: NetError?) {}
        }
        var config = HTTP2ClientConfig()
        config.streamTimeout = 0.5
        try oneRequest(to: Silent(), config: config) { collector, conn, loop in
            #expect(collector.results[0].map { if case .failure(.timedOut) = $0 { true } else { false } } == true)
            loop.execute { conn.close() }
        }
    }
}
