import HeraldCore
import HeraldHTTPServer
import Testing

@Suite struct MetricsTests {
    @Test func countersAppearInTheRegistryUnderTheListenerLabel() throws {
        let registry = MetricsRegistry()
        let server = try startServer(HTTPServerConfig(maxBodyBytes: 10))
        defer { server.stop() }
        server.registerMetrics(in: registry, listener: "api")
        let c = try connect(server)
        try c.send(get("/"))
        _ = try c.readResponse()
        _ = try roundTrip(server, "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 11\r\n\r\n")
        let text = registry.render()
        #expect(text.contains(#"herald_http_requests_received_total{listener="api"} 2"#))
        #expect(text.contains(#"herald_http_requests_rejected_total{listener="api"} 1"#))
        #expect(text.contains(#"herald_http_connections{listener="api"} "#))
        #expect(text.contains(#"herald_http_requests_aborted_total{listener="api"} 0"#))
    }
}
