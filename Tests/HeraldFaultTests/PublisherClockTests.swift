import Foundation
import HeraldCore
import HeraldTestSupport
import Testing

/// Issue #6, "Faults": a publisher whose clock is wrong. docs/api.md ("What Herald does for
/// you") and docs/openapi.yaml: a given `aps.timestamp` must be newer than the channel's
/// last event (else 409 `stale_timestamp`) — a time in the past is fine as long as it is —
/// and at most 600 s ahead of the server's clock (else 422 `invalid_field`); Herald's own
/// timestamps stay strictly increasing after one from the future. Through the real server.
extension FaultTests {
    @Suite struct PublisherClock {
        @Test func pastAndFutureTimestampsAreHandledAsDocumented() throws {
            let h = try ServedHerald()
            try h.channel("clock")
            let tokens = makeTokens(50, seed: 901)
            try h.subscribe("clock", tokens)
            func publish(_ ts: Int64?, _ home: Int) throws -> APIResponse {
                var aps: [String: JSON] = ["event": "update", "content-state": ["home": .int(Int64(home))]]
                if let ts { aps["timestamp"] = .int(ts) }
                return try h.publish("clock", .object(aps))
            }
            let now = Int64(Date().timeIntervalSince1970)

            // An hour in the past, on a channel with no event yet: accepted as given.
            let past = try publish(now - 3600, 1)
            #expect(past.status == 202)
            #expect(past.json?["aps_timestamp"]?.intValue == now - 3600)
            // Older than the channel's last, or equal to it: 409 stale_timestamp.
            for ts in [now - 7200, now - 3600] {
                let stale = try publish(ts, 2)
                #expect(stale.status == 409)
                #expect(stale.errorCode == "stale_timestamp")
            }
            // Without one, Herald uses its clock (newer than the last).
            let own = try publish(nil, 3)
            #expect(own.status == 202)
            let ownTS = try #require(own.json?["aps_timestamp"]?.intValue)
            #expect(ownTS >= now && ownTS <= Int64(Date().timeIntervalSince1970))

            // More than 600 s ahead of the server's clock (which is at least `now`): 422.
            let far = try publish(Int64(Date().timeIntervalSince1970) + 660, 4)
            #expect(far.status == 422)
            #expect(far.errorCode == "invalid_field")
            #expect(far.header("content-type")?.hasPrefix("application/json") == true)
            let veryFar = try publish(now + 365 * 86400, 4)
            #expect(veryFar.status == 422)
            // Ahead but within the 600 s: accepted as given; the next event without a
            // timestamp gets one more than it, not the (older) clock.
            let ahead = now + 300
            let within = try publish(ahead, 5)
            #expect(within.status == 202)
            #expect(within.json?["aps_timestamp"]?.intValue == ahead)
            let after = try publish(nil, 6)
            #expect(after.status == 202)
            #expect(after.json?["aps_timestamp"]?.intValue == ahead + 1)
            // A publisher behind the clock is now stale even with the real time.
            let behind = try publish(Int64(Date().timeIntervalSince1970), 7)
            #expect(behind.status == 409)
            #expect(behind.errorCode == "stale_timestamp")

            // Refused events were not stored; the accepted ones reach every subscriber in
            // order, with strictly increasing timestamps.
            let ids = try [past, own, within, after].map { try #require($0.json?["event_id"]?.stringValue) }
            for id in ids { #expect(try h.serve.waitEvent("clock", id, timeout: 30) != nil) }
            let channel = try #require(try h.serve.send("GET", "/v1/channels/clock").json)
            #expect(channel["last_event"]?["seq"]?.intValue == 4)
            let lastDone = try h.serve.send("GET", "/v1/channels/clock/events/\(ids[3])").json
            #expect(lastDone?["state"]?.stringValue == "done")
            var unordered = 0
            for t in tokens {
                let stamps = h.sim.sim.pushes(to: t).compactMap(\.timestamp)
                if stamps.last != ahead + 1 || zip(stamps, stamps.dropFirst()).contains(where: { $0 >= $1 }) { unordered += 1 }
            }
            #expect(unordered == 0)
        }
    }
}
