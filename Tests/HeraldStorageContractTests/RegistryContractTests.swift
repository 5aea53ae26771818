import Foundation
import HeraldCore
import HeraldStore
import Testing

/// Channels and subscriptions: the same bodies on SQLite and PostgreSQL.
@Suite struct RegistryContractTests {
    @Test(arguments: Backend.allCases) func channelsAreCreatedOnceListedAndClosed(_ b: Backend) throws {
        let f = try Fixture(b)
        let m = try f.channel("m", settings: ChannelSettings(catchUp: false, minIntervalMillis: 250, priority10BudgetPerHour: 7))
        try f.channel("a", mode: .hybrid)
        #expect(m.isOpen && m.lifecycle == .idle && m.lastSeq == 0 && !m.catchUp && m.minIntervalMillis == 250)
        #expect(m.priority10BudgetPerHour == 7 && m.createdAtMillis == 1_796_000_000_000)
        #expect(throws: StoreError.channelExists("m")) { try f.channel("m") }
        #expect(try f.storage.channel(id: "m") == m)
        #expect(try f.storage.channel(num: m.num) == m)
        #expect(try f.storage.channel(id: "nope") == nil)
        #expect(try f.storage.channels().map(\.id) == ["a", "m"])
        try f.storage.setAPNSChannelID(channelNum: m.num, "abc=")
        #expect(try f.storage.channel(id: "m")?.apnsChannelID == "abc=")

        _ = try f.storage.register(channelID: "m", token: tokens(1)[0], kind: .activity, replaces: nil, expiresAt: nil)
        let queued = try f.publish().event
        let (closed, stopped) = try f.storage.closeChannel(id: "m")
        #expect(!closed.isOpen && closed.closedAtMillis == 1_796_000_000_000)
        #expect(stopped == [queued.id])
        let e = try f.storage.event(channelID: "m", eventID: queued.id)
        #expect(e.state == .failed && e.failureReason == "channel_closed")
        #expect(try f.storage.subscriberCounts(channelNum: m.num) == (0, 0))
        #expect(throws: StoreError.channelClosed("m")) { try f.publish() }
        #expect(throws: StoreError.channelClosed("m")) {
            try f.storage.register(channelID: "m", token: tokens(1)[0], kind: .activity, replaces: nil, expiresAt: nil)
        }
        #expect(throws: StoreError.channelExists("m")) { try f.channel("m") }
        #expect(throws: StoreError.channelNotFound("x")) { try f.storage.closeChannel(id: "x") }
        #expect(try f.storage.closeChannel(id: "m").1 == [])
    }

    @Test(arguments: Backend.allCases) func registrationIsIdempotentAndRotationReplaces(_ b: Backend) throws {
        let f = try Fixture(b)
        let ch = try f.channel()
        let t = tokens(3)
        let (s, created, seen) = try f.storage.register(channelID: "m", token: t[0], kind: .activity, replaces: nil, expiresAt: nil)
        #expect(created && seen.num == ch.num && s.registeredAtMillis == 1_796_000_000_000)
        #expect(s.expiresAt == 1_796_000_000 + Store.activityLifetime)
        f.clock.advance(by: 5)
        let again = try f.storage.register(channelID: "m", token: t[0], kind: .activity, replaces: nil, expiresAt: 1_796_000_100)
        #expect(!again.created && again.0.registeredAtMillis == 1_796_000_005_000 && again.0.expiresAt == 1_796_000_100)
        // Rotation: the new token in, the old one out, in one step.
        let rotated = try f.storage.register(channelID: "m", token: t[1], kind: .activity, replaces: t[0], expiresAt: nil)
        #expect(rotated.created)
        _ = try f.storage.register(channelID: "m", token: t[2], kind: .pushToStart, replaces: nil, expiresAt: nil)
        #expect(try f.storage.subscriberCounts(channelNum: ch.num) == (1, 1))
        #expect(try f.storage.countSubscriptions(channelNum: ch.num, kind: .activity) == 1)
        #expect(try f.storage.subscriptionTotals() == (1, 1))
        try f.storage.unregister(channelID: "m", token: t[2])
        #expect(throws: StoreError.subscriptionNotFound) { try f.storage.unregister(channelID: "m", token: t[2]) }
        #expect(throws: StoreError.channelNotFound("x")) { try f.storage.unregister(channelID: "x", token: t[2]) }
        #expect(throws: StoreError.channelNotFound("x")) {
            try f.storage.register(channelID: "x", token: t[2], kind: .activity, replaces: nil, expiresAt: nil)
        }
        #expect(try f.storage.subscriberCounts(channelNum: ch.num) == (1, 0))
    }

    @Test(arguments: Backend.allCases) func batchCountsAndReportsOnlyNewActivityTokensAsJoined(_ b: Backend) throws {
        let f = try Fixture(b)
        let ch = try f.channel()
        let t = tokens(6)
        _ = try f.storage.register(channelID: "m", token: t[0], kind: .activity, replaces: nil, expiresAt: nil)
        _ = try f.storage.register(channelID: "m", token: t[5], kind: .activity, replaces: nil, expiresAt: nil)
        let r = try f.storage.batch(
            channelID: "m",
            subscribe: [
                SubscriptionInput(token: t[3]), SubscriptionInput(token: t[0]), SubscriptionInput(token: t[1]),
                SubscriptionInput(token: t[2], kind: .pushToStart), SubscriptionInput(token: t[4]),
            ],
            unsubscribe: [t[4], t[5]])
        #expect(r.subscribed == 4 && r.updated == 1 && r.unsubscribed == 2)
        // t[1] and t[3] are new activity tokens (in token order); t[4] left again; t[2] is push-to-start.
        #expect(r.joined == [t[1], t[3]])
        #expect(r.channel?.num == ch.num)
        #expect(try f.storage.subscriberCounts(channelNum: ch.num) == (3, 1))
        #expect(throws: StoreError.channelNotFound("x")) { try f.storage.batch(channelID: "x", subscribe: [], unsubscribe: []) }
    }

    @Test(arguments: Backend.allCases) func aBigBatchIsOneTransactionAndScansInTokenOrder(_ b: Backend) throws {
        let f = try Fixture(b)
        let ch = try f.channel()
        let t = tokens(1200)
        let r = try f.storage.batch(channelID: "m", subscribe: t.map { SubscriptionInput(token: $0) }, unsubscribe: [])
        #expect(r.subscribed == 1200 && r.joined.count == 1200)
        let sorted = t.sorted { $0.lexicographicallyPrecedes($1) }
        let scan = try f.storage.makeScanner()
        var seen: [[UInt8]] = []
        var after: [UInt8] = []
        while true {
            let rows = try scan.next(
                channelNum: ch.num, kind: .activity, shards: .all, after: after, before: nil, now: f.clock.nowSeconds(), limit: 500)
            seen += rows
            guard rows.count == 500, let last = rows.last else { break }
            after = last
        }
        #expect(seen == sorted)
        // Bounded above (inclusive), and a subset of shards.
        let upTo = try scan.next(
            channelNum: ch.num, kind: .activity, shards: .all, after: [], before: sorted[9], now: f.clock.nowSeconds(), limit: 500)
        #expect(Array(upTo) == Array(sorted[0...9]))
        let some = ShardSet([1, 7, Shards.count - 1])
        let part = try scan.next(
            channelNum: ch.num, kind: .activity, shards: some, after: [], before: nil, now: f.clock.nowSeconds(), limit: 2000)
        #expect(Array(part) == sorted.filter { some.holds(token: $0) })
    }

    @Test(arguments: Backend.allCases) func pruneHonoursTheTimestampOfThe410AgainstReRegistration(_ b: Backend) throws {
        let f = try Fixture(b)
        let ch = try f.channel()
        let t = tokens(2)
        _ = try f.storage.register(channelID: "m", token: t[0], kind: .activity, replaces: nil, expiresAt: nil)
        _ = try f.storage.register(channelID: "m", token: t[1], kind: .activity, replaces: nil, expiresAt: nil)
        let registered = f.clock.nowMillis()
        // APNs stamped the 410 before the registration: the token was re-registered since, it stays.
        #expect(try f.storage.prune(channelNum: ch.num, [(.activity, t[0], registered)]) == 0)
        // After it: removed (once, even if reported twice); the wrong kind removes nothing.
        #expect(try f.storage.prune(channelNum: ch.num, [(.pushToStart, t[1], registered + 1)]) == 0)
        #expect(try f.storage.prune(channelNum: ch.num, [(.activity, t[0], registered + 1), (.activity, t[0], registered + 1)]) == 1)
        #expect(try f.storage.prune(channelNum: ch.num, []) == 0)
        f.clock.advance(by: 10)
        _ = try f.storage.register(channelID: "m", token: t[1], kind: .activity, replaces: nil, expiresAt: nil)
        #expect(try f.storage.prune(channelNum: ch.num, [(.activity, t[1], registered + 1)]) == 0)
        #expect(try f.storage.countSubscriptions(channelNum: ch.num, kind: .activity) == 1)
    }

    @Test(arguments: Backend.allCases) func activityTokensExpireAfterTwelveHoursAndAreSwept(_ b: Backend) throws {
        let f = try Fixture(b)
        let ch = try f.channel()
        let t = tokens(4)
        _ = try f.storage.register(channelID: "m", token: t[0], kind: .activity, replaces: nil, expiresAt: nil)
        // Asked for a day: capped at 12 h.
        let capped = try f.storage.register(channelID: "m", token: t[1], kind: .activity, replaces: nil, expiresAt: 1_796_000_000 + 86_400)
        #expect(capped.0.expiresAt == Int64(1_796_000_000 + 12 * 3600))
        _ = try f.storage.register(channelID: "m", token: t[2], kind: .pushToStart, replaces: nil, expiresAt: nil)
        _ = try f.storage.register(channelID: "m", token: t[3], kind: .pushToStart, replaces: nil, expiresAt: 1_796_000_060)
        f.clock.advance(by: 61)
        #expect(try f.storage.subscriberCounts(channelNum: ch.num) == (2, 1))
        f.clock.advance(by: 12 * 3600)
        #expect(try f.storage.subscriberCounts(channelNum: ch.num) == (0, 1))
        let scan = try f.storage.makeScanner()
        #expect(
            try scan.next(channelNum: ch.num, kind: .activity, shards: .all, after: [], before: nil, now: f.clock.nowSeconds(), limit: 10)
                .isEmpty)
        #expect(try f.storage.subscriptionTotals() == (2, 2))
        #expect(try f.storage.sweepExpiredSubscriptions(limit: 2) == 2)
        #expect(try f.storage.sweepExpiredSubscriptions(limit: 10) == 1)
        #expect(try f.storage.sweepExpiredSubscriptions(limit: 10) == 0)
        #expect(try f.storage.subscriptionTotals() == (0, 1))
    }

    @Test(arguments: Backend.allCases) func keysStoreOnlyAHashAndAuthenticateLiveSecrets(_ b: Backend) throws {
        let f = try Fixture(b)
        let (key, secret) = try f.storage.createKey(role: .publisher, channels: ["m", "match-*"], label: "cms")
        #expect(secret.hasPrefix("hk_" + key.id.dropFirst(4) + "_"))
        #expect(key.channels == ["m", "match-*"] && key.label == "cms" && key.role == .publisher)
        #expect(try f.storage.authenticate(secret: secret) == key)
        #expect(try f.storage.authenticate(secret: secret + "x") == nil)
        #expect(try f.storage.authenticate(secret: "hk_nope_nope") == nil)
        #expect(try f.storage.authenticate(secret: "garbage") == nil)
        f.clock.advance(by: 1)
        let (admin, _) = try f.storage.createKey(role: .admin, channels: [], label: nil)
        #expect(try f.storage.keys().map(\.id) == [admin.id, key.id])
        let revoked = try f.storage.revokeKey(id: key.id)
        #expect(revoked.revokedAtMillis == f.clock.nowMillis())
        #expect(try f.storage.authenticate(secret: secret) == nil)
        #expect(throws: StoreError.keyNotFound("key_x")) { try f.storage.revokeKey(id: "key_x") }
    }
}
