import HeraldStore
import Testing

/// The PostgreSQL scanner sends a pass's next statement before its rows are needed. Passes
/// that alternate on one scanner (channels served round robin, a pass dropped halfway and
/// another started) still get exactly their tokens in token order, and a token removed
/// before its part of the pass was read is not returned.
@Suite struct ScannerSendAheadTests {
    @Test func alternatingAndRestartedPassesGetExactlyTheirTokensInOrder() throws {
        let f = try Fixture(.postgres)
        let a = try f.channel("a")
        let b = try f.channel("b")
        let ta = tokens(5000, seed: 3).sorted { $0.lexicographicallyPrecedes($1) }
        let tb = tokens(4000, seed: 4).sorted { $0.lexicographicallyPrecedes($1) }
        _ = try f.storage.batch(channelID: "a", subscribe: ta.map { SubscriptionInput(token: $0) }, unsubscribe: [])
        _ = try f.storage.batch(channelID: "b", subscribe: tb.map { SubscriptionInput(token: $0) }, unsubscribe: [])
        let scan = try f.storage.makeScanner()
        let now = f.clock.nowSeconds()
        let half = ShardSet(0..<Shards.count / 2)
        func page(_ ch: Channel, _ shards: ShardSet, after: [UInt8]) throws -> [[UInt8]] {
            Array(try scan.next(channelNum: ch.num, kind: .activity, shards: shards, after: after, before: nil, now: now, limit: 250))
        }

        // Round robin: a page of a, a page of b, … until both end.
        var seenA: [[UInt8]] = []
        var seenB: [[UInt8]] = []
        var doneA = false
        var doneB = false
        while !(doneA && doneB) {
            if !doneA {
                let p = try page(a, .all, after: seenA.last ?? [])
                seenA += p
                doneA = p.count < 250
            }
            if !doneB {
                let p = try page(b, half, after: seenB.last ?? [])
                seenB += p
                doneB = p.count < 250
            }
        }
        #expect(seenA == ta)
        #expect(seenB == tb.filter { half.holds(token: $0) })

        // A pass dropped after three pages, then one from elsewhere (a resumed checkpoint);
        // a token ahead of it removed meanwhile is not returned.
        var first: [[UInt8]] = []
        for _ in 0..<3 { first += try page(a, .all, after: first.last ?? []) }
        #expect(first == Array(ta.prefix(750)))
        let gone = ta[3500]
        _ = try f.storage.batch(channelID: "a", subscribe: [], unsubscribe: [gone])
        var resumed: [[UInt8]] = []
        var from = ta[2999]
        while true {
            let p = try page(a, .all, after: from)
            resumed += p
            guard p.count == 250, let last = p.last else { break }
            from = last
        }
        #expect(resumed == ta[3000...].filter { $0 != gone })
    }
}
