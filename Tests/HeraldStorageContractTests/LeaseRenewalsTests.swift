import Foundation
import HeraldCore
import HeraldPostgresStore
import HeraldStore
import HeraldTestSupport
import Testing

/// Every lease of a renewal tick renewed in one statement: each channel's shards still held
/// come back with a new validity, and a shard another worker claimed since is left out.
@Suite struct LeaseRenewalsTests {
    @Test func manyLeasesAreRenewedAtOnceAndALostShardIsLeftOut() throws {
        let f = try Fixture(.postgres)
        let a = try f.channel("a")
        let b = try f.channel("b")
        let w = try f.secondWorker(leaseDuration: .milliseconds(500))
        let la = try #require(try w.acquireLease(channelNum: a.num))
        let lb = try #require(try w.acquireLease(channelNum: b.num))
        var r = try w.renewLeases([la, lb])
        #expect(r[a.num]??.shards == .all && r[b.num]??.shards == .all)
        #expect((r[a.num]??.validFor ?? 0) > 0.3)
        // Channel b's lease lapses and another worker takes it; a keeps being renewed.
        let deadline = Date().addingTimeInterval(10)
        var taken: Lease?
        while taken == nil && Date() < deadline {
            r = try w.renewLeases([la])
            #expect(r[a.num]??.shards == .all)
            taken = try f.storage.acquireLease(channelNum: b.num)
            if taken == nil { usleep(100_000) }
        }
        #expect(taken?.shards == .all)
        r = try w.renewLeases([la, lb])
        #expect(r[a.num]??.shards == .all)
        #expect(r[b.num] == .some(nil), "a lease another worker holds was renewed")
    }
}
