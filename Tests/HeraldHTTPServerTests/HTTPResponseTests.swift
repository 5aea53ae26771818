import HeraldCore
import HeraldHTTPServer
import Testing

@Suite struct HTTPResponseTests {
    @Test func errorRendersExactlyTheAPIErrorShape() {
        let r = HTTPResponse.error(413, code: "request_too_large", message: "Too \"big\" / long")
        #expect(r.status == 413)
        #expect(r.header("Content-Type") == "application/json")
        #expect(
            String(decoding: r.body, as: UTF8.self)
                == #"{"error":{"code":"request_too_large","message":"Too \"big\" / long"}}"#)
    }

    @Test func errorKeepsExtraHeaders() {
        let r = HTTPResponse.error(429, code: "rate_limited", message: "Slow down.", headers: [("Retry-After", "3")])
        #expect(r.header("retry-after") == "3")
        #expect(r.header("content-type") == "application/json")
    }

    @Test func textAndEmptyHaveTheirContentTypes() {
        #expect(HTTPResponse.text(200, "é").body == [0xC3, 0xA9])
        #expect(HTTPResponse.text(200, "x").header("content-type") == "text/plain; charset=utf-8")
        #expect(HTTPResponse.text(200, "x", contentType: "text/csv").header("content-type") == "text/csv")
        #expect(HTTPResponse.empty(204).headers.isEmpty)
        #expect(HTTPResponse.empty(204).body.isEmpty)
    }

    @Test func requestHeaderLookupIgnoresCase() {
        let r = HTTPRequest(method: "GET", path: "/", headers: ["Idempotency-Key": "k1"])
        #expect(r.header("idempotency-key") == "k1")
        #expect(r.header("IDEMPOTENCY-KEY") == "k1")
        #expect(r.header("missing") == nil)
    }
}
