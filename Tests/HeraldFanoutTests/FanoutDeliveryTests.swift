import Foundation
import HeraldAPNS
import HeraldCore
import HeraldFanout
import HeraldSender
import HeraldSimulator
import HeraldStore
import HeraldTestSupport
import Testing

@Suite struct FanoutDeliveryTests {
    @Test func aHundredThousandSubscribersEachGetTheEventExactlyOnce() throws {
        let fx = try FanoutFixture(connections: 4)
        try fx.channel("match-big")
        let tokens = makeTokens(100_000, seed: 7)
        try fx.subscribe("match-big", tokens)
        let start = Date()
        let e = try fx.publish("match-big", state: ["home": 1, "away": 0])
        let done = try fx.waitFinished(e, timeout: 120)
        print("fanout: 100k in \(String(format: "%.2f", Date().timeIntervalSince(start))) s")
        #expect(done.state == .done)
        #expect(done.counters.targets == 100_000)
        #expect(done.counters.sent == 100_000)
        #expect(done.counters.failed == 0)
        let counts = fx.sim.sim.tokenCounts()
        #expect(counts.count == 100_000)
        #expect(counts.values.allSatisfy { $0 == 1 })
        let reached = fx.sim.sim.tokens(thatReceived: done.payload) == Set(tokens)
        #expect(reached, "not every subscriber got the event")
        // The exact bytes carry the timestamp Herald assigned, and the Live Activity topic.
        let push = try #require(fx.sim.sim.pushes(to: tokens[0]).first)
        #expect(push.timestamp == done.apsTimestamp)
        #expect(push.event == "update")
        // Nothing of the fan-out stays behind: every request object is gone (other suites
        // run in parallel, so allow their in-flight requests, not ours).
        let deadline = Date(timeIntervalSinceNow: 5)
        while APNSRequest.live > 20_000 && Date() < deadline { usleep(10_000) }
        #expect(APNSRequest.live < 20_000, "\(APNSRequest.live) requests still alive after the fan-out: a leak")
    }

    @Test func aNewerUpdateSupersedesForSubscribersNotYetReached() throws {
        // A slow APNs (10 streams, 20 ms each): v1 is mid-way when v2 arrives.
        let fx = try FanoutFixture(
            connections: 1, fanout: { $0.batchSize = 50 },
            simulator: { sim in
                sim.maxConcurrentStreams = 10
                sim.faults.latency = 0.02
            })
        try fx.channel("m")
        let tokens = makeTokens(2000, seed: 3)
        try fx.subscribe("m", tokens)
        let v1 = try fx.publish("m", state: ["score": 1])
        #expect(fx.waitAccepted(200))
        let v2 = try fx.publish("m", state: ["score": 2])
        let r2 = try fx.waitFinished(v2)
        let r1 = try fx.waitFinished(v1)
        #expect(r1.state == .superseded)
        #expect(r1.supersededBy == v2.id)
        #expect(r1.counters.sent >= 200 && r1.counters.sent < 2000)
        #expect(r1.counters.skipped == 2000 - r1.counters.sent)
        #expect(r2.state == .done)
        #expect(r2.counters.sent == 2000)
        var both = 0
        for t in tokens {
            let got = fx.sim.sim.pushes(to: t).map(\.payload)
            // Everyone has v2, last; some had v1 first; nobody v1 after v2 or v1 twice.
            #expect(got == [r2.payload] || got == [r1.payload, r2.payload], "token \(t): \(got.count) pushes")
            if got.count == 2 { both += 1 }
        }
        #expect(Int64(both) == r1.counters.sent)
        // v1's stored checkpoint covers only tokens that really got v1: its requests still
        // queued when v2 arrived come back cancelled and complete their batches, which must
        // not move it (after a crash, the database would claim progress that never happened).
        let cursor = try #require(r1.cursor, "v1 was never checkpointed")
        let covered = tokens.filter { t in
            let b = Hex.decode(t)!
            return b.lexicographicallyPrecedes(cursor) || b == cursor
        }
        let missed = covered.filter { fx.sim.sim.pushes(to: $0).first?.payload != r1.payload }.count
        #expect(!covered.isEmpty)
        #expect(missed == 0, "v1's checkpoint covers \(missed) of \(covered.count) tokens that never got v1")
    }

    @Test func anEndIsNeverSupersededAndUpdatesAfterItAreRefused() throws {
        let fx = try FanoutFixture(
            connections: 1,
            simulator: { sim in
                sim.maxConcurrentStreams = 10
                sim.faults.latency = 0.01
            })
        try fx.channel("m")
        let tokens = makeTokens(500, seed: 4)
        try fx.subscribe("m", tokens)
        let u = try fx.publish("m", state: ["score": 1])
        let end = try fx.publish("m", .end, state: ["score": 9])
        #expect(throws: StoreError.activityEnded("m")) { try fx.publish("m", state: ["score": 10]) }
        let rEnd = try fx.waitFinished(end)
        let rU = try fx.waitFinished(u)
        #expect(rEnd.state == .done)
        #expect(rEnd.counters.sent == 500)
        #expect(rU.state == .superseded)
        for t in tokens { #expect(fx.sim.sim.pushes(to: t).last?.event == "end") }
        // A new start reopens the channel for updates.
        _ = try fx.publish("m", .start, state: ["score": 0])
        _ = try fx.publish("m", state: ["score": 1])
    }

    @Test func aSmallChannelFinishesWhileABigOneIsMidway() throws {
        let fx = try bigAndSmallChannels(bigSeed: 5, small: makeTokens(10, seed: 6))
        let big = try fx.publish("big")
        #expect(fx.waitAccepted(1000))
        let small = try fx.publish("small")
        let rSmall = try fx.waitFinished(small, timeout: 10)
        let rBig = try fx.store.event(channelID: "big", eventID: big.id)
        #expect(rSmall.state == .done)
        #expect(rSmall.counters.sent == 10)
        #expect(rBig.state == .sending, "the big fan-out should still be running")
        #expect(rBig.counters.sent < 20_000)
        _ = try fx.waitFinished(big, timeout: 60)
    }
}

/// A sender that a fan-out keeps busy for seconds: one connection of 50 streams to a
/// simulator answering in 10 ms, batches of 100; channel "big" with 20 000 subscribers and
/// "small" with `small`.
func bigAndSmallChannels(
    bigSeed: UInt64, small: [String], fanout: @escaping (inout FanoutConfig) -> Void = { _ in }
) throws -> FanoutFixture {
    let fx = try FanoutFixture(
        connections: 1,
        fanout: {
            $0.batchSize = 100
            fanout(&$0)
        },
        simulator: { sim in
            sim.maxConcurrentStreams = 50
            sim.faults.latency = 0.01
        })
    try fx.channel("big")
    try fx.channel("small")
    try fx.subscribe("big", makeTokens(20_000, seed: bigSeed))
    try fx.subscribe("small", small)
    return fx
}
