import Foundation
import HeraldCore
import HeraldTestSupport
import Testing

@Suite(.liveAPI) struct HealthAndRoutingTests {
    @Test func healthzAndReadyzAnswerWithoutAKey() throws {
        let fx = try Live.api()
        let h = try fx.client.send("GET", "/healthz")
        #expect(h.status == 200)
        #expect(h.json == ["status": "ok"])
        #expect(h.header("content-type") == "application/json")
        let r = try fx.client.send("GET", "/readyz")
        #expect(r.status == 200)
        #expect(r.json == ["status": "ready"])
    }

    @Test func headOnHealthRoutesSendsHeadersWithoutABody() throws {
        let fx = try Live.api()
        for path in ["/healthz", "/readyz", "/metrics"] {
            let r = try fx.client.send("HEAD", path)
            #expect(r.status == 200, "\(path)")
            #expect(r.body.isEmpty)
            #expect(Int(r.header("content-length") ?? "") ?? 0 > 0, "\(path) announces its GET body length")
        }
    }

    @Test func metricsIsPrometheusTextAndCountsRequestsByRouteTemplate() throws {
        let fx = try Live.api()
        let channel = unique("metrics")
        try fx.admin("GET", "/v1/channels/\(channel)")  // a 404 on a templated route
        let r = try fx.client.send("GET", "/metrics")
        #expect(r.status == 200)
        #expect(r.header("content-type")?.hasPrefix("text/plain") == true)
        #expect(r.json == nil)
        #expect(r.text.contains("# TYPE herald_http_requests_total counter"))
        let line = r.text.split(separator: "\n").first {
            $0.hasPrefix("herald_http_requests_total{") && $0.contains(#"route="/v1/channels/{id}""#) && $0.contains(#"code="404""#)
        }
        #expect(line != nil, "a 404 on /v1/channels/{id} is counted under the template")
        #expect(!r.text.contains(channel), "ids never become label values")
        #expect(r.text.contains("herald_http_request_duration_seconds_bucket"))
    }

    @Test func anUnknownRouteIsA404InTheErrorShape() throws {
        let fx = try Live.api()
        for path in [
            "/", "/v1", "/v2/channels", "/v1/channels/x/subscriptions", "/v1/channels/x/events/y/z", "/v1/keys/a/b", "/favicon.ico",
        ] {
            let r = try fx.admin("GET", path)
            #expect(r.status == 404, "\(path)")
            #expect(r.errorCode == "not_found", "\(path)")
            #expect(r.json?["error"]?.objectValue?.keys.sorted() == ["code", "message"])
            #expect(r.header("content-type") == "application/json")
        }
        // Without a key too: routing comes before authentication.
        #expect(try fx.client.send("GET", "/v1/nothing").status == 404)
    }

    @Test func aWrongMethodIs405WithAllow() throws {
        let fx = try Live.api()
        let cases: [(String, String, String)] = [
            ("PATCH", "/v1/channels", "GET, POST"),
            ("PUT", "/v1/channels/x", "GET, PATCH, DELETE"),
            ("GET", "/v1/keys/key_x", "DELETE"),
            ("POST", "/healthz", "GET, HEAD"),
            ("DELETE", "/metrics", "GET, HEAD"),
            ("GET", "/v1/channels/x/subscriptions/\(freshToken())", "PUT, DELETE"),
            ("GET", "/v1/channels/x/subscriptions:batch", "POST"),
            ("PUT", "/v1/channels/x/events", "GET, POST"),
            ("POST", "/v1/channels/x/events/evt_1", "GET, DELETE"),
        ]
        for (method, path, allow) in cases {
            let r = try fx.client.send(method, path)  // no key: 405 comes before 401
            #expect(r.status == 405, "\(method) \(path)")
            #expect(r.errorCode == "method_not_allowed")
            #expect(r.header("allow") == allow, "\(method) \(path)")
        }
    }

    @Test func aTrailingSlashAndPercentEncodedIdsRouteToTheSameResource() throws {
        let fx = try Live.api()
        let id = unique("match:final.2026")
        try fx.createChannel(id)
        #expect(try fx.admin("GET", "/v1/channels/\(id)/").json?["id"]?.stringValue == id)
        #expect(try fx.admin("GET", "/v1/channels/\(id.replacingOccurrences(of: ":", with: "%3A"))").json?["id"]?.stringValue == id)
        // An encoded slash stays inside the segment: it is an id, not a separator.
        let r = try fx.admin("PUT", "/v1/channels/a%2Fb/events")
        #expect(r.status == 405)
        #expect(try fx.admin("GET", "/v1/channels/a%2Fb").errorCode == "not_found")
    }

    @Test func anEncodedNULInThePathIsRefusedBeforeRouting() throws {
        let fx = try Live.api()
        let r = try fx.admin("GET", "/v1/channels/a%00b")
        #expect(r.status == 400)
        #expect(r.errorCode == "invalid_path")
    }
}
