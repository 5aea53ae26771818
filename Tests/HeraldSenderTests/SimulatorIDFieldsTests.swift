import Foundation
import HeraldTestSupport
import Testing

@testable import HeraldAPNS
@testable import HeraldCore
@testable import HeraldNet
@testable import HeraldSender
@testable import HeraldSimulator

/// 40 token pushes on one connection, one first and 39 after it (requests and answers encoded
/// before and after the first): their results, and how many the simulator accepted.
func fortyPushesOnOneConnection(generatesAPNSID: Bool, seed: UInt64) throws -> (results: [APNSResult], accepted: Int) {
    let fx = try SimFixture()
    let (pool, _) = try fx.pool(connections: 1)
    defer { pool.shutdown() }
    let sink = ResultCollector()
    let template = APNSTemplate(
        headers: HeaderList(APNSRequests.tokenPushFields(bundleID: "com.example.app", priority: 5, expiration: nil)),
        body: HTTP2Body(updatePayload(1)), sink: sink, keepResponseHeaders: true, generatesAPNSID: generatesAPNSID)
    let tokens = makeTokens(40, seed: seed)
    pool.submit([APNSRequest(path: APNSRequests.tokenPath(tokens[0]), template: template, index: 0)])
    #expect(sink.wait(for: 1))
    pool.submit(tokens.enumerated().dropFirst().map { APNSRequest(path: APNSRequests.tokenPath($1), template: template, index: $0) })
    #expect(sink.wait(for: 40))
    return (sink.outcomes().map(\.value), fx.sim.stats().accepted)
}

/// The simulator's 200s on one connection: the first sends `apns-id` and `apns-unique-id`
/// with indexing (their names enter the HPACK table), every later one refers to the names
/// by index with its values out of the table. Herald's client (nghttp2's decoder) must
/// read both ids from every answer, each id fresh.
@Suite struct SimulatorIDFieldsTests {
    @Test func everyAnswerOfAConnectionCarriesItsOwnIDsWhetherFirstOrLater() throws {
        let (results, accepted) = try fortyPushesOnOneConnection(generatesAPNSID: false, seed: 62)
        var ids = Set<String>()
        for r in results {
            guard case .outcome(.delivered(let id?, let unique?), _) = r else {
                Issue.record("not delivered with both ids: \(r)")
                continue
            }
            #expect(Identifiers.isLowercaseUUID(id), "\(id)")
            #expect(Identifiers.isLowercaseUUID(unique), "\(unique)")
            ids.insert(id)
            ids.insert(unique)
        }
        #expect(ids.count == 80, "a fresh apns-id and apns-unique-id per answer")
        #expect(accepted == 40)
    }
}

/// The pool's own `apns-id` per request on one connection, the first and the later ones
/// (each kept out of the HPACK table). The simulator echoes each request's id, so every
/// answer must carry a different one.
@Suite struct ClientIDFieldsTests {
    @Test func everyRequestOfAConnectionSendsItsOwnAPNSIDWhetherFirstOrLater() throws {
        let (results, accepted) = try fortyPushesOnOneConnection(generatesAPNSID: true, seed: 63)
        var ids = Set<String>()
        for r in results {
            guard case .outcome(.delivered(let id?, _), _) = r else {
                Issue.record("not delivered with an id: \(r)")
                continue
            }
            #expect(Identifiers.isLowercaseUUID(id), "\(id)")
            ids.insert(id)
        }
        #expect(ids.count == 40, "each request's own apns-id, echoed")
        #expect(accepted == 40)
    }
}
