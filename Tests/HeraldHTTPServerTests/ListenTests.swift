import Glibc
import HeraldCore
import HeraldHTTPServer
import Testing

@Suite struct ListenTests {
    @Test func listensOnIPv6Loopback() throws {
        let server = try startServer(HTTPServerConfig(host: "::1"))
        defer { server.stop() }
        #expect(server.boundAddress == "::1")
        #expect(server.port != 0)
        let json = try #require(try roundTrip(server, get("/six")).json)
        #expect(json["remote"] == "::1")
    }

    /// IPv6 only: the server does not hold its port on IPv4's loopback. Shown by binding
    /// 127.0.0.1 on that port ourselves (a connect could reach another test's server that
    /// happens to have the same number on IPv4); when another process holds it, the check
    /// is made again on a new server's port, a few times.
    @Test func anIPv6ServerLeavesItsPortFreeOnIPv4() throws {
        var outcomes: [Int32] = []
        for _ in 0..<5 {
            let server = try startServer(HTTPServerConfig(host: "::1"))
            let rc = bindIPv4Loopback(port: server.port)
            server.stop()
            outcomes.append(rc)
            if rc != EADDRINUSE { break }
        }
        #expect(outcomes.last == 0, "bind 127.0.0.1 on the server's port: errno \(outcomes)")
    }

    /// Binds (and closes) a TCP socket on 127.0.0.1:`port`: 0, or the errno.
    private func bindIPv4Loopback(port: UInt16) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return errno }
        defer { Glibc.close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        return rc == 0 ? 0 : errno
    }

    @Test func bracketedIPv6AndLocalhostAreAccepted() throws {
        let six = try HTTPServer(config: HTTPServerConfig(host: "[::1]"), logger: .discard, handler: EchoHandler())
        #expect(six.boundAddress == "::1")
        let four = try HTTPServer(config: HTTPServerConfig(host: "localhost"), logger: .discard, handler: EchoHandler())
        #expect(four.boundAddress == "127.0.0.1")
    }

    @Test func portIsKnownBeforeStartAndServedAfter() throws {
        let server = try HTTPServer(config: HTTPServerConfig(), logger: .discard, handler: EchoHandler())
        defer { server.stop() }
        #expect(server.port != 0)
        #expect(!server.isRunning)
        try server.start()
        try server.start()  // a second start changes nothing
        #expect(server.isRunning)
        #expect(try roundTrip(server, get("/")).status == 200)
    }

    @Test func bindingAPortInUseThrowsAddressInUse() throws {
        let first = try startServer()
        defer { first.stop() }
        #expect(throws: HTTPServerError.addressInUse(host: "127.0.0.1", port: first.port)) {
            _ = try HTTPServer(
                config: HTTPServerConfig(port: first.port), logger: .discard, handler: EchoHandler())
        }
    }

    @Test func hostNamesAndGarbageAreRefused() {
        for host in ["example.com", "127.0.0.256", "::g", ""] {
            #expect(throws: HTTPServerError.invalidHost(host)) {
                _ = try HTTPServer(config: HTTPServerConfig(host: host), logger: .discard, handler: EchoHandler())
            }
        }
    }

    @Test func anAddressThisMachineDoesNotHaveIsASocketError() throws {
        // TEST-NET-1 (RFC 5737) is never assigned to a local interface.
        do {
            _ = try HTTPServer(config: HTTPServerConfig(host: "192.0.2.1"), logger: .discard, handler: EchoHandler())
            Issue.record("bound an address this machine does not have")
        } catch {
            #expect(error == .socket(operation: "bind 192.0.2.1 port 0", errno: EADDRNOTAVAIL))
        }
    }

    @Test func outOfRangeSettingsAreRefusedByName() {
        let cases: [(HTTPServerConfig, String)] = [
            (HTTPServerConfig(threads: 0), "threads"),
            (HTTPServerConfig(threads: 8, maxConnections: 4), "maxConnections"),
            (HTTPServerConfig(connectionTimeoutSeconds: 0), "connectionTimeoutSeconds"),
            (HTTPServerConfig(maxBodyBytes: -1), "maxBodyBytes"),
            (HTTPServerConfig(connectionMemoryLimit: 100), "connectionMemoryLimit"),
        ]
        for (config, field) in cases {
            do {
                try config.validate()
                Issue.record("\(field) accepted")
            } catch {
                guard case .invalidConfig(let f, _) = error else {
                    Issue.record("unexpected \(error)")
                    continue
                }
                #expect(f == field)
            }
        }
    }

    @Test func aServerNeverStartedReleasesItsPort() throws {
        var server: HTTPServer? = try HTTPServer(config: HTTPServerConfig(), logger: .discard, handler: EchoHandler())
        let port = try #require(server?.port)
        server = nil
        let again = try HTTPServer(config: HTTPServerConfig(port: port), logger: .discard, handler: EchoHandler())
        #expect(again.port == port)
    }
}
