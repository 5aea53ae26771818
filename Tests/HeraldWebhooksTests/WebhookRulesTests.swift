import HeraldCore
import Testing

@testable import HeraldWebhooks

/// The pure parts of webhook delivery: the signature recipe, which addresses a webhook may
/// reach, which URLs are accepted, and the retry schedule.
@Suite struct WebhookRulesTests {
    // Computed independently: python3 -c 'import hmac,hashlib; print(hmac.new(b"whsec_test",
    // b"1767225600.{\"type\":\"event.finished\"}", hashlib.sha256).hexdigest())'
    static let vector = "562215bfe61fe40335698dd7f313b4f183642978e1e6cf29d2431262b88fa023"
    let secret = Array("whsec_test".utf8)
    let body = Array(#"{"type":"event.finished"}"#.utf8)

    @Test func theSignatureIsHMACSHA256OfTimestampDotBody() {
        #expect(WebhookSignature.header(secret: secret, timestamp: 1_767_225_600, body: body) == "t=1767225600,v1=\(Self.vector)")
    }

    @Test func verifyFollowsTheDocumentedRecipe() {
        let h = WebhookSignature.header(secret: secret, timestamp: 1_767_225_600, body: body)
        #expect(WebhookSignature.verify(header: h, secret: secret, body: body, now: 1_767_225_600 + 10))
        #expect(WebhookSignature.verify(header: "v2=abc, " + h + ",x=1", secret: secret, body: body, now: 1_767_225_600))
        #expect(!WebhookSignature.verify(header: h, secret: Array("other".utf8), body: body, now: 1_767_225_600))
        #expect(!WebhookSignature.verify(header: h, secret: secret, body: body + [32], now: 1_767_225_600))
        #expect(!WebhookSignature.verify(header: h, secret: secret, body: body, now: 1_767_225_600 + 301), "replayed too late")
        #expect(!WebhookSignature.verify(header: "v1=\(Self.vector)", secret: secret, body: body, now: 1_767_225_600), "no t")
    }

    @Test(
        arguments: [
            ([127, 0, 0, 1], AddressClass.loopback), ([127, 9, 8, 7], .loopback),
            ([10, 1, 2, 3], .privateNetwork), ([172, 16, 0, 1], .privateNetwork), ([172, 31, 255, 255], .privateNetwork),
            ([172, 32, 0, 1], .global), ([192, 168, 1, 1], .privateNetwork), ([169, 254, 169, 254], .privateNetwork),
            ([100, 64, 0, 1], .privateNetwork), ([100, 128, 0, 1], .global), ([0, 0, 0, 0], .unusable),
            ([224, 0, 0, 1], .unusable), ([255, 255, 255, 255], .unusable), ([8, 8, 8, 8], .global), ([17, 253, 144, 10], .global),
        ] as [([UInt8], AddressClass)])
    func ipv4AddressesAreClassed(bytes: [UInt8], expected: AddressClass) {
        #expect(AddressClass(bytes: bytes) == expected)
    }

    @Test func ipv6AddressesAreClassedAndMappedIPv4IsTheIPv4() {
        func v6(_ prefix: [UInt8], _ tail: [UInt8] = []) -> [UInt8] {
            prefix + [UInt8](repeating: 0, count: 16 - prefix.count - tail.count) + tail
        }
        #expect(AddressClass(bytes: v6([], [1])) == .loopback)
        #expect(AddressClass(bytes: v6([])) == .unusable)
        #expect(AddressClass(bytes: v6([0xfd, 0x12])) == .privateNetwork)
        #expect(AddressClass(bytes: v6([0xfe, 0x80])) == .privateNetwork)
        #expect(AddressClass(bytes: v6([0xff, 0x02])) == .unusable)
        #expect(AddressClass(bytes: v6([0x26, 0x06, 0x47, 0x00])) == .global)
        #expect(AddressClass(bytes: v6([], [0xff, 0xff, 10, 0, 0, 1])) == .privateNetwork, "::ffff:10.0.0.1")
        #expect(AddressClass(bytes: v6([], [0xff, 0xff, 127, 0, 0, 1])) == .loopback, "::ffff:127.0.0.1")
        #expect(AddressClass(bytes: v6([0, 0x64, 0xff, 0x9b], [169, 254, 169, 254])) == .privateNetwork, "NAT64 of the metadata address")
        #expect(AddressClass(bytes: [1, 2, 3]) == .unusable)
    }

    @Test func thePolicyAllowsLoopbackAndPublicAndPrivateOnlyWhenAsked() {
        let strict = WebhookAddressPolicy()
        #expect(strict.permits(.global) && strict.permits(.loopback))
        #expect(!strict.permits(.privateNetwork) && !strict.permits(.unusable))
        let open = WebhookAddressPolicy(allowLoopback: false, allowPrivate: true)
        #expect(open.permits(.privateNetwork) && !open.permits(.loopback) && !open.permits(.unusable))
    }

    @Test(
        arguments: [
            ("https://hooks.example.com/herald", nil),
            ("https://hooks.example.com:8443/a?b=c", nil),
            ("http://127.0.0.1:9000/hook", nil),
            ("http://[::1]:9000/hook", nil),
            ("http://localhost:9000/hook", nil),
            ("https://127.0.0.1/hook", nil),
            ("http://hooks.example.com/hook", WebhookTarget.Refusal.Reason.plainHTTP),
            ("http://10.0.0.5/hook", .plainHTTP),
            ("https://10.0.0.5/hook", .address),
            ("https://169.254.169.254/latest/meta-data", .address),
            ("https://[fd00::1]/hook", .address),
            ("https://0.0.0.0/hook", .address),
            ("ftp://hooks.example.com/x", .scheme),
            ("file:///etc/passwd", .malformed),
            ("https://user:pw@hooks.example.com/", .credentials),
            ("https://hooks.example.com/#frag", .malformed),
            ("not a url", .malformed),
        ] as [(String, WebhookTarget.Refusal.Reason?)])
    func urlsAreCheckedWhenAWebhookIsCreated(url: String, refusal: WebhookTarget.Refusal.Reason?) {
        do {
            let t = try WebhookTarget(url, policy: WebhookAddressPolicy())
            #expect(refusal == nil, "\(url) was accepted")
            #expect(t.url == url)
        } catch {
            #expect(error.reason == refusal, "\(url): \(error.message)")
        }
    }

    @Test func privateAddressesNeedTheExplicitOption() throws {
        let t = try WebhookTarget("https://10.0.0.5/hook", policy: WebhookAddressPolicy(allowPrivate: true))
        #expect(t.host == "10.0.0.5" && t.isHTTPS)
        #expect(throws: WebhookTarget.Refusal.self) {
            try WebhookTarget("http://127.0.0.1/h", policy: WebhookAddressPolicy(allowLoopback: false))
        }
    }

    @Test func retriesBackOffWithJitterHonourRetryAfterAndStopAfter24Hours() {
        let s = WebhookRetrySchedule()
        #expect(s.next(attempts: 1, createdAt: 0, now: 0, unit: 0) == 2.5)
        #expect(s.next(attempts: 1, createdAt: 0, now: 0, unit: 0.999_999)! > 4.99)
        #expect(s.next(attempts: 3, createdAt: 0, now: 100, unit: 0) == 110)
        #expect(s.next(attempts: 20, createdAt: 0, now: 100, unit: 0) == 1_000, "capped at 30 min (jitter down to half): 100 + 900")
        #expect(s.next(attempts: 1, createdAt: 0, now: 0, unit: 0, retryAfter: 60) == 60)
        #expect(s.next(attempts: 1, createdAt: 0, now: 0, unit: 0, retryAfter: 1e9) == 1800, "Retry-After within the cap")
        #expect(s.next(attempts: 1, createdAt: 0, now: 0, unit: 0, retryAfter: .nan) == 2.5)
        #expect(s.next(attempts: 30, createdAt: 0, now: 86_000, unit: 1) == nil, "past 24 h: dropped")
        #expect(s.next(attempts: 30, createdAt: 0, now: 80_000, unit: 0) == 80_900)
    }
}
