import Foundation
import HeraldAPNS
import HeraldCore
import HeraldSQL
import Testing

@testable import HeraldStore

/// A store on a fresh temporary file.
final class TempStore {
    let dir = NSTemporaryDirectory() + "herald-store-\(UUID().uuidString)"
    let store: Store
    let clock: ManualClock

    init() throws {
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        clock = ManualClock(1_796_000_000)
        store = try Store(path: dir + "/h.db", clock: clock)
    }

    deinit {
        store.close()
        try? FileManager.default.removeItem(atPath: dir)
    }

    func channel(_ id: String = "m", mode: ChannelMode = .fanout) throws -> Channel {
        try store.createChannel(
            id: id, bundleID: "com.example.app", mode: mode, environment: .sandbox, storagePolicy: .none,
            apnsChannelID: mode == .fanout ? nil : "Y2g=")
    }

    func event(_ kind: LiveActivityEventKind = .update, timestamp: Int64? = nil, pad: Int = 0) throws -> LiveActivityEvent {
        var aps: [String: JSON] = ["event": .string(kind.rawValue), "content-state": ["p": .string(String(repeating: "x", count: pad))]]
        if let timestamp { aps["timestamp"] = .int(timestamp) }
        if kind == .start {
            aps["attributes-type"] = "A"
            aps["attributes"] = [:]
            aps["alert"] = ["title": "t"]
        }
        return try LiveActivityEvent.validate(.object(["aps": .object(aps)]))
    }
}

let tokenA: [UInt8] = Array(repeating: 0xaa, count: 32)
let tokenB: [UInt8] = Array(repeating: 0xbb, count: 32)

@Suite struct StoreTests {
    @Test func migrationsAreRecordedAndANewerDatabaseIsRefused() throws {
        let t = try TempStore()
        #expect(try t.store.appliedMigrations() == Store.migrations.map(\.version))
        #expect(t.store.isReady())
        _ = try t.store.db.writeUnbatched { c in try c.run("INSERT INTO schema_migrations VALUES (999, 'future', 0)") }
        t.store.close()
        #expect(throws: StoreError.self) { _ = try Store(path: t.dir + "/h.db") }
    }

    @Test func timestampsStrictlyIncreasePerChannelAndOldOnesAreRefused() throws {
        let t = try TempStore()
        _ = try t.channel()
        let a = try t.store.publish(channelID: "m", event: try t.event(), idempotencyKey: nil, dryRun: false).event
        #expect(a.apsTimestamp == 1_796_000_000)
        // Same second: Herald still moves the timestamp forward.
        let b = try t.store.publish(channelID: "m", event: try t.event(), idempotencyKey: nil, dryRun: false).event
        #expect(b.apsTimestamp == a.apsTimestamp + 1)
        #expect(b.seq == a.seq + 1)
        // The rendered bytes carry it, exactly.
        #expect(try JSON.parse(b.payload)["aps"]?["timestamp"] == .int(b.apsTimestamp))
        #expect(throws: StoreError.staleTimestamp(given: b.apsTimestamp, last: b.apsTimestamp)) {
            try t.store.publish(channelID: "m", event: try t.event(timestamp: b.apsTimestamp), idempotencyKey: nil, dryRun: false)
        }
        #expect(throws: StoreError.futureTimestamp(given: 1_796_000_000 + 3600, limit: Store.maxTimestampSkew)) {
            try t.store.publish(channelID: "m", event: try t.event(timestamp: 1_796_000_000 + 3600), idempotencyKey: nil, dryRun: false)
        }
        let c = try t.store.publish(channelID: "m", event: try t.event(timestamp: b.apsTimestamp + 100), idempotencyKey: nil, dryRun: false)
            .event
        #expect(c.apsTimestamp == b.apsTimestamp + 100)
    }

    @Test func afterAnEndUpdatesWaitForANewStart() throws {
        let t = try TempStore()
        _ = try t.channel()
        _ = try t.store.publish(channelID: "m", event: try t.event(.end), idempotencyKey: nil, dryRun: false)
        #expect(throws: StoreError.activityEnded("m")) {
            try t.store.publish(channelID: "m", event: try t.event(.update), idempotencyKey: nil, dryRun: false)
        }
        _ = try t.store.publish(channelID: "m", event: try t.event(.start), idempotencyKey: nil, dryRun: false)
        _ = try t.store.publish(channelID: "m", event: try t.event(.update), idempotencyKey: nil, dryRun: false)
    }

    @Test func payloadLimitsDependOnTheMode() throws {
        let t = try TempStore()
        _ = try t.channel("tokens")
        _ = try t.channel("bcast", mode: .broadcast)
        let big = try t.event(pad: 4500)
        #expect(throws: StoreError.self) { try t.store.publish(channelID: "tokens", event: big, idempotencyKey: nil, dryRun: false) }
        // Broadcast takes up to 5120.
        _ = try t.store.publish(channelID: "bcast", event: big, idempotencyKey: nil, dryRun: false)
        do {
            _ = try t.store.publish(channelID: "bcast", event: try t.event(pad: 5200), idempotencyKey: nil, dryRun: false)
            Issue.record("a 5.2 KB broadcast payload was accepted")
        } catch let StoreError.payloadTooLarge(size, limit, broadcast) {
            #expect(size > 5120 && limit == 5120 && broadcast)
        }
    }

    @Test func anIdempotencyKeyReturnsTheFirstEventForADay() throws {
        let t = try TempStore()
        _ = try t.channel()
        let a = try t.store.publish(channelID: "m", event: try t.event(), idempotencyKey: "goal-63", dryRun: false)
        let b = try t.store.publish(channelID: "m", event: try t.event(), idempotencyKey: "goal-63", dryRun: false)
        #expect(a.created && !b.created)
        #expect(b.event.id == a.event.id)
        t.clock.advance(by: 24 * 3600 + 1)
        let c = try t.store.publish(channelID: "m", event: try t.event(), idempotencyKey: "goal-63", dryRun: false)
        #expect(c.created && c.event.id != a.event.id)
    }

    @Test func aDryRunChecksEverythingAndCommitsNothing() throws {
        let t = try TempStore()
        let ch = try t.channel()
        _ = try t.store.batch(channelID: "m", subscribe: [SubscriptionInput(token: tokenA)], unsubscribe: [])
        let r = try t.store.publish(channelID: "m", event: try t.event(), idempotencyKey: nil, dryRun: true)
        #expect(r.targets == 1 && r.limit == 4096)
        #expect(try t.store.lastEvent(channelNum: ch.num) == nil)
    }

    @Test func registrationIsIdempotentRefreshesItsTimeAndRotationIsAtomic() throws {
        let t = try TempStore()
        let ch = try t.channel()
        let (_, created1, _) = try t.store.register(channelID: "m", token: tokenA, kind: .activity, replaces: nil, expiresAt: nil)
        t.clock.advance(by: 10)
        let (sub, created2, _) = try t.store.register(channelID: "m", token: tokenA, kind: .activity, replaces: nil, expiresAt: nil)
        #expect(created1 && !created2)
        #expect(sub.registeredAtMillis == 1_796_000_010_000)
        // Activities live 12 h at most, whatever the client asks.
        #expect(sub.expiresAt == Int64(1_796_000_010 + 12 * 3600))
        let (_, created3, _) = try t.store.register(
            channelID: "m", token: tokenB, kind: .activity, replaces: tokenA, expiresAt: 9_999_999_999)
        #expect(created3)
        #expect(try t.store.subscription(channelNum: ch.num, token: tokenA) == nil)
        #expect(try t.store.subscription(channelNum: ch.num, token: tokenB)?.expiresAt == Int64(1_796_000_010 + 12 * 3600))
        try t.store.unregister(channelID: "m", token: tokenB)
        #expect(throws: StoreError.subscriptionNotFound) { try t.store.unregister(channelID: "m", token: tokenB) }
    }

    @Test func aBatchIsAppliedInKeyOrderButATokenListedTwiceEndsAsItsLastEntrySays() throws {
        let t = try TempStore()
        let ch = try t.channel()
        // The store sorts a batch by token before inserting; the sort must keep arrival order
        // among equal keys.
        let r = try t.store.batch(
            channelID: "m",
            subscribe: [
                SubscriptionInput(token: tokenB, kind: .pushToStart, expiresAt: 1_796_100_000),
                SubscriptionInput(token: tokenA, kind: .pushToStart, expiresAt: 1_796_200_000),
                SubscriptionInput(token: tokenB, kind: .pushToStart, expiresAt: 1_796_000_500),
            ],
            unsubscribe: [])
        #expect(r.subscribed == 2 && r.updated == 1)
        #expect(try t.store.subscription(channelNum: ch.num, token: tokenB)?.expiresAt == 1_796_000_500)
        #expect(try t.store.subscription(channelNum: ch.num, token: tokenA)?.expiresAt == 1_796_200_000)
    }

    @Test func expiredSubscriptionsAreSweptInBoundedChunks() throws {
        let t = try TempStore()
        let ch = try t.channel()
        #expect(try t.store.subscriptionTotals() == (0, 0), "an empty registry")
        let old = (0..<30).map { i in SubscriptionInput(token: [UInt8](repeating: UInt8(i), count: 32)) }
        _ = try t.store.batch(channelID: "m", subscribe: old, unsubscribe: [])
        #expect(try t.store.subscriptionTotals() == (30, 0))
        t.clock.advance(by: 12 * 3600 + 1)
        _ = try t.store.batch(channelID: "m", subscribe: [SubscriptionInput(token: tokenA, kind: .pushToStart)], unsubscribe: [])
        #expect(try t.store.countSubscriptions(channelNum: ch.num, kind: .activity) == 0, "expired ones are not live")
        #expect(try t.store.sweepExpiredSubscriptions(limit: 20) == 20)
        #expect(try t.store.sweepExpiredSubscriptions(limit: 20) == 10)
        #expect(try t.store.sweepExpiredSubscriptions(limit: 20) == 0)
        #expect(try t.store.subscriptionTotals() == (0, 1))
    }

    @Test func aClosedChannelRefusesPublishesAndRegistrationsAndDropsSubscriptions() throws {
        let t = try TempStore()
        let ch = try t.channel()
        _ = try t.store.batch(channelID: "m", subscribe: [SubscriptionInput(token: tokenA)], unsubscribe: [])
        let queued = try t.store.publish(channelID: "m", event: try t.event(), idempotencyKey: nil, dryRun: false).event
        let (closed, stopped) = try t.store.closeChannel(id: "m")
        #expect(!closed.isOpen && stopped == [queued.id])
        #expect(try t.store.event(id: queued.id)?.state == .failed)
        #expect(try t.store.countSubscriptions(channelNum: ch.num, kind: .activity) == 0)
        #expect(throws: StoreError.channelClosed("m")) {
            try t.store.publish(channelID: "m", event: try t.event(), idempotencyKey: nil, dryRun: false)
        }
        #expect(throws: StoreError.channelClosed("m")) {
            try t.store.register(channelID: "m", token: tokenA, kind: .activity, replaces: nil, expiresAt: nil)
        }
        #expect(throws: StoreError.channelExists("m")) { try t.channel() }
    }

    @Test func tokensAreValidatedAtTheDoorAndStoredAsBytes() throws {
        #expect(Identifier.tokenBytes("ab") == nil, "too short")
        #expect(Identifier.tokenBytes(String(repeating: "g", count: 64)) == nil, "not hex")
        #expect(Identifier.tokenBytes(String(repeating: "a", count: 63)) == nil, "odd length")
        #expect(Identifier.tokenBytes(String(repeating: "A", count: 160))?.count == 80)
        let t = try TempStore()
        let ch = try t.channel()
        _ = try t.store.batch(channelID: "m", subscribe: [SubscriptionInput(token: tokenA)], unsubscribe: [])
        let stored = try t.store.db.read { c in try c.queryValue("SELECT token FROM subscriptions WHERE channel = ?", [.integer(ch.num)]) }
        #expect(stored == .blob(tokenA))
    }

    @Test func keysAreStoredHashedScopedAndRevocable() throws {
        let t = try TempStore()
        let (key, secret) = try t.store.createKey(role: .publisher, channels: ["match-*", "flight-1"], label: "feed")
        #expect(secret.count > 40)
        let raw = try t.store.db.read { c in try c.query("SELECT * FROM api_keys") }
        #expect(!raw.description.contains(secret), "the secret is stored")
        let found = try #require(try t.store.authenticate(secret: secret))
        #expect(found.id == key.id)
        #expect(found.covers(channel: "match-final") && found.covers(channel: "flight-1"))
        #expect(!found.covers(channel: "flight-12") && !found.covers(channel: "other"))
        #expect(try t.store.authenticate(secret: secret + "x") == nil)
        #expect(try t.store.authenticate(secret: "hk_\(key.id.dropFirst(4))_wrong") == nil)
        _ = try t.store.revokeKey(id: key.id)
        #expect(try t.store.authenticate(secret: secret) == nil)
    }

    @Test func aMillionTokensRegisterInSeconds() throws {
        let t = try TempStore()
        let ch = try t.channel()
        var g = SystemRandomNumberGenerator()
        let inputs = (0..<200_000).map { _ in SubscriptionInput(token: (0..<32).map { _ in UInt8.random(in: 0...255, using: &g) }) }
        let start = Date()
        let r = try t.store.batch(channelID: "m", subscribe: inputs, unsubscribe: [])
        let s = Date().timeIntervalSince(start)
        print("store: 200k registrations in \(String(format: "%.2f", s)) s (\(Int(200_000 / s))/s)")
        #expect(r.subscribed == 200_000)
        #expect(try t.store.countSubscriptions(channelNum: ch.num, kind: .activity) == 200_000)
        // The scan streams them back in token order, in batches, all of them.
        let scanner = try SubscriptionScanner(store: t.store)
        var after: [UInt8] = []
        var n = 0
        while true {
            let rows = try scanner.next(
                channelNum: ch.num, kind: .activity, after: after, before: nil, now: t.clock.nowSeconds(), limit: 5000)
            if rows.isEmpty { break }
            #expect(rows.first!.lexicographicallyPrecedes(rows.last!) || rows.count == 1)
            n += rows.count
            after = rows.last!
        }
        #expect(n == 200_000)
    }
}

/// The SQLite store behind the storage protocols.
@Suite struct StoreStorageTests {
    @Test func aScanOfSomeShardsReturnsExactlyTheirTokensInOrder() throws {
        let t = try TempStore()
        let ch = try t.channel()
        var tokens: [[UInt8]] = []
        for i in 0..<3_000 { tokens.append(Array(repeating: UInt8(i % 251), count: 30) + [UInt8(i >> 8), UInt8(i & 255)]) }
        _ = try t.store.batch(channelID: "m", subscribe: tokens.map { SubscriptionInput(token: $0) }, unsubscribe: [])
        let scan = try (t.store as any Registry).makeScanner()
        let some = ShardSet([0, 3, 11])
        var got: [[UInt8]] = []
        var after: [UInt8] = []
        while true {
            let rows = try scan.next(
                channelNum: ch.num, kind: .activity, shards: some, after: after, before: nil, now: t.clock.nowSeconds(), limit: 100)
            got += rows
            guard rows.count == 100 else { break }
            after = rows.last!
        }
        let want = tokens.filter { some.holds(token: $0) }.sorted { Store.compareBytes($0, $1) < 0 }
        #expect(!want.isEmpty)
        #expect(got == want)
        let lease = try t.store.acquireLease(channelNum: ch.num)
        #expect(lease == Lease(channelNum: ch.num, shards: .all))
    }

    @Test func statesAreReadBackAsEnums() throws {
        let t = try TempStore()
        _ = try t.channel("b", mode: .broadcast)
        let r = try t.store.publish(channelID: "b", event: try t.event(.end), idempotencyKey: nil, dryRun: false)
        #expect(r.event.broadcastState == .pending)
        try t.store.setBroadcastState(eventID: r.event.id, state: .sent, reason: nil)
        let e = try t.store.event(id: r.event.id)
        #expect(e?.broadcastState == .sent && e?.state == .queued)
        #expect(try t.store.channel(id: "b")?.lifecycle == .ended)
        #expect(try t.store.unfinishedEvents().map(\.id) == [r.event.id])
        try t.store.finishEvent(eventID: r.event.id, state: .done, counters: EventCounters())
        #expect(try t.store.unfinishedEvents().isEmpty)
        #expect(try t.store.lastFinishedSeq(channelNum: r.channel.num) == 1)
        let (closed, _) = try t.store.closeChannel(id: "b")
        #expect(!closed.isOpen)
    }
}
