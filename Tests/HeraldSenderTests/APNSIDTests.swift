import Foundation
import HeraldTestSupport
import Testing

@testable import HeraldAPNS
@testable import HeraldCore
@testable import HeraldNet
@testable import HeraldSender
@testable import HeraldSimulator

@Suite struct APNSIDTests {
    @Test func thePoolGivesEachRequestALowerCaseAPNSID() throws {
        var out = [UInt8](repeating: 0, count: 36)
        APNSClientPool.formatUUID(&out, 0x0123_4567_89ab_cdef, 0xfedc_ba98_7654_3210)
        let s = String(decoding: out, as: UTF8.self)
        #expect(Identifiers.isLowercaseUUID(s), "\(s)")
        #expect(s == "01234567-89ab-4def-bedc-ba9876543210")
        let fx = try SimFixture()
        let (pool, _) = try fx.pool()
        defer { pool.shutdown() }
        let sink = ResultCollector()
        let template = APNSTemplate(
            headers: HeaderList(APNSRequests.tokenPushFields(bundleID: "com.example.app", priority: 5, expiration: nil)),
            body: HTTP2Body(updatePayload(1)), sink: sink, keepResponseHeaders: true, generatesAPNSID: true)
        let tokens = makeTokens(20, seed: 61)
        pool.submit(tokens.enumerated().map { APNSRequest(path: APNSRequests.tokenPath($1), template: template, index: $0) })
        #expect(sink.wait(for: 20))
        var ids = Set<String>()
        for (_, r) in sink.outcomes() {
            guard case .outcome(.delivered(let id?, _), _) = r else {
                Issue.record("not delivered: \(r)")
                continue
            }
            #expect(Identifiers.isLowercaseUUID(id))
            ids.insert(id)
        }
        #expect(ids.count == 20, "the simulator echoes the apns-id the pool generated, one per request")
    }
}
