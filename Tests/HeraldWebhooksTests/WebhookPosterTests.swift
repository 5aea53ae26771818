import Foundation
import Glibc
import HeraldCore
import HeraldCrypto
import HeraldHTTPServer
import Testing

@testable import HeraldWebhooks

/// Posts against real receivers on loopback: Herald's own HTTP server for plain http, and
/// Python's TLS server for https (certificate verification both ways).
@Suite struct WebhookPosterTests {
    final class Received: Sendable {
        let requests = Locked<[HTTPRequest]>([])
    }

    func receiver(_ answer: @escaping @Sendable (HTTPRequest) -> HTTPResponse) throws -> (HTTPServer, Received) {
        let got = Received()
        let server = try HTTPServer(
            config: HTTPServerConfig(host: "127.0.0.1", threads: 2, maxConnections: 16), logger: .discard,
            handler: HTTPHandlerFunction { r in
                got.requests.withLock { $0.append(r) }
                return answer(r)
            })
        try server.start()
        return (server, got)
    }

    @Test func aPostCarriesTheBodyAndHeadersAndReturnsTheStatus() throws {
        let (server, got) = try receiver { _ in .empty(204) }
        defer { server.stop() }
        let poster = try WebhookPoster()
        let body = Array(#"{"type":"channel.closed"}"#.utf8)
        let sig = WebhookSignature.header(secret: [1, 2, 3], timestamp: 1_767_225_600, body: body)
        let r = poster.post(
            url: "http://127.0.0.1:\(server.port)/hook", body: body, headers: [("Herald-Signature", sig), ("Herald-Delivery", "42")])
        #expect(r == .answered(status: 204, retryAfter: nil))
        #expect(r.isSuccess)
        let req = try #require(got.requests.withLock { $0.first })
        #expect(req.method == "POST" && req.path == "/hook")
        #expect(req.body == body)
        #expect(req.header("content-type") == "application/json")
        #expect(req.header("herald-signature") == sig)
        #expect(req.header("herald-delivery") == "42")
        #expect(req.header("expect") == nil)
        // The handle is reused: a second post on the same poster works too.
        #expect(poster.post(url: "http://127.0.0.1:\(server.port)/hook", body: body, headers: []).isSuccess)
    }

    @Test func aRefusalKeepsItsStatusAndRetryAfter() throws {
        let (server, _) = try receiver { _ in HTTPResponse(status: 503, headers: [("Retry-After", "120")]) }
        defer { server.stop() }
        let r = try WebhookPoster().post(url: "http://127.0.0.1:\(server.port)/hook", body: Array("{}".utf8), headers: [])
        #expect(r == .answered(status: 503, retryAfter: 120))
        #expect(!r.isSuccess)
    }

    @Test func aSlowReceiverTimesOut() throws {
        let (server, _) = try receiver { _ in
            usleep(3_000_000)  // a receiver that does not answer in time
            return .empty(200)
        }
        defer { server.stop() }
        var config = WebhookPosterConfig()
        config.totalTimeout = 0.5
        let started = Date()
        let r = try WebhookPoster(config: config).post(url: "http://127.0.0.1:\(server.port)/hook", body: Array("{}".utf8), headers: [])
        guard case .failed(let e) = r else {
            Issue.record("not a failure: \(r)")
            return
        }
        #expect(e.isTimeout, "\(e)")
        #expect(Date().timeIntervalSince(started) < 2.5)
    }

    @Test func aClosedPortFailsWithoutAnAnswer() throws {
        let (server, _) = try receiver { _ in .empty(200) }
        let port = server.port
        server.stop()
        let r = try WebhookPoster().post(url: "http://127.0.0.1:\(port)/hook", body: Array("{}".utf8), headers: [])
        guard case .failed = r else {
            Issue.record("\(r)")
            return
        }
    }

    /// The SSRF guard runs on the resolved address, before any socket exists: a name that
    /// resolves to a forbidden address gets no connection at all.
    @Test func aForbiddenResolvedAddressGetsNoConnection() throws {
        let (server, got) = try receiver { _ in .empty(200) }
        defer { server.stop() }
        var config = WebhookPosterConfig()
        config.policy = WebhookAddressPolicy(allowLoopback: false)
        let r = try WebhookPoster(config: config).post(url: "http://localhost:\(server.port)/hook", body: Array("{}".utf8), headers: [])
        guard case .refusedAddress(let why) = r else {
            Issue.record("\(r)")
            return
        }
        #expect(why.contains("127.0.0.1") || why.contains("::1"))
        #expect(got.requests.withLock { $0.isEmpty })
    }

    @Test func httpsIsVerifiedAgainstTheGivenCAAndRefusedWithoutIt() throws {
        let tls = try PythonTLSReceiver()
        defer { tls.stop() }
        var trusted = WebhookPosterConfig()
        trusted.caFile = tls.certFile
        let ok = try WebhookPoster(config: trusted).post(url: "https://127.0.0.1:\(tls.port)/hook", body: Array("{}".utf8), headers: [])
        #expect(ok == .answered(status: 200, retryAfter: nil))
        let r = try WebhookPoster().post(url: "https://127.0.0.1:\(tls.port)/hook", body: Array("{}".utf8), headers: [])
        guard case .failed(let e) = r else {
            Issue.record("an untrusted certificate was accepted: \(r)")
            return
        }
        #expect(e.isCertificateProblem, "\(e)")
    }
}

/// An HTTPS receiver on 127.0.0.1 (Python's http.server in TLS), with a fresh self-signed
/// certificate for 127.0.0.1; it answers every POST 200.
final class PythonTLSReceiver {
    let dir: String
    let certFile: String
    let process: Process
    let port: Int

    init() throws {
        dir = NSTemporaryDirectory() + "herald-tls-\(UInt64.random(in: 0...UInt64.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let key = try P256PrivateKey.generate()
        certFile = dir + "/cert.pem"
        let keyFile = dir + "/key.pem"
        try SelfSignedCertificate.generate(
            key: key, commonName: "receiver", dnsNames: ["localhost"], ipAddresses: ["127.0.0.1"], validDays: 1
        )
        .write(toFile: certFile, atomically: true, encoding: .utf8)
        try key.pkcs8PEM().write(toFile: keyFile, atomically: true, encoding: .utf8)
        let script = """
            import http.server, ssl, sys
            class H(http.server.BaseHTTPRequestHandler):
                def do_POST(self):
                    self.rfile.read(int(self.headers.get('Content-Length', 0)))
                    self.send_response(200); self.send_header('Content-Length', '0'); self.end_headers()
                def log_message(self, *a): pass
            s = http.server.HTTPServer(('127.0.0.1', 0), H)
            c = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); c.load_cert_chain(sys.argv[1], sys.argv[2])
            s.socket = c.wrap_socket(s.socket, server_side=True)
            print(s.server_address[1], flush=True)
            s.serve_forever()
            """
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-c", script, certFile, keyFile]
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        var line: [UInt8] = []
        while let b = try out.fileHandleForReading.read(upToCount: 1), let c = b.first, c != 10 { line.append(c) }
        guard let p = Int(String(decoding: line, as: UTF8.self)) else {
            kill(process.processIdentifier, SIGKILL)
            throw CocoaError(.fileReadCorruptFile)
        }
        port = p
    }

    func stop() {
        // SIGKILL: a child of the test runner may start with SIGTERM blocked (the runner's
        // dispatch threads block signals, and the mask is inherited), so terminate() can hang.
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        try? FileManager.default.removeItem(atPath: dir)
    }
}
