import HeraldAPNS
import HeraldCore
import Testing

@testable import HeraldStore

/// The publish rules without a database: a channel value in, a decision out.
@Suite struct PublishRuleTests {
    let now: Int64 = 1_796_000_000_000

    func channel(
        mode: ChannelMode = .fanout, lifecycle: ChannelLifecycle = .idle, lastSeq: Int64 = 0, lastTimestamp: Int64 = 0,
        open: Bool = true
    ) -> Channel {
        Channel(
            num: 7, id: "m", bundleID: "com.example.app", mode: mode, environment: .sandbox, storagePolicy: .none,
            apnsChannelID: mode == .fanout ? nil : "Y2g=", isOpen: open, lifecycle: lifecycle, lastSeq: lastSeq,
            lastTimestamp: lastTimestamp, currentEvent: nil, catchUp: true, minIntervalMillis: 0, priority10BudgetPerHour: 0,
            createdAtMillis: 0, closedAtMillis: nil)
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

    func accepted(_ d: PublishRule.Decision) throws -> PublishRule.Accepted {
        guard case .accept(let a) = d else { throw Refused() }
        return a
    }
    struct Refused: Error {}

    @Test func theNextSeqAndATimestampPastTheLastAreGiven() throws {
        let a = try accepted(
            PublishRule.decide(channel: channel(lastSeq: 4, lastTimestamp: now / 1000 + 5), event: event(), existing: nil, nowMillis: now))
        #expect(a.seq == 5)
        #expect(a.apsTimestamp == now / 1000 + 6)
        let fresh = try accepted(PublishRule.decide(channel: channel(lastTimestamp: 10), event: event(), existing: nil, nowMillis: now))
        #expect(fresh.apsTimestamp == now / 1000)
        #expect(try JSON.parse(fresh.payload)["aps"]?["timestamp"]?.intValue == now / 1000)
    }

    @Test func aStaleOrFarFutureTimestampIsRefused() throws {
        let ch = channel(lastTimestamp: 1_000)
        #expect(throws: StoreError.staleTimestamp(given: 1_000, last: 1_000)) {
            try PublishRule.decide(channel: ch, event: try event(timestamp: 1_000), existing: nil, nowMillis: now)
        }
        let limit = now / 1000 + PublishRule.maxTimestampSkew
        #expect(throws: StoreError.futureTimestamp(given: limit + 1, limit: PublishRule.maxTimestampSkew)) {
            try PublishRule.decide(channel: ch, event: try event(timestamp: limit + 1), existing: nil, nowMillis: now)
        }
        let a = try accepted(PublishRule.decide(channel: ch, event: try event(timestamp: limit), existing: nil, nowMillis: now))
        #expect(a.apsTimestamp == limit)
    }

    @Test func afterAnEndOnlyAStartIsTaken() throws {
        let ended = channel(lifecycle: .ended)
        #expect(throws: StoreError.activityEnded("m")) {
            try PublishRule.decide(channel: ended, event: try event(.update), existing: nil, nowMillis: now)
        }
        let start = try accepted(PublishRule.decide(channel: ended, event: try event(.start), existing: nil, nowMillis: now))
        #expect(start.lifecycle == .started)
        #expect(!start.becomesCurrent)
        let end = try accepted(
            PublishRule.decide(channel: channel(lifecycle: .started), event: try event(.end), existing: nil, nowMillis: now))
        #expect(end.lifecycle == .ended)
        #expect(end.becomesCurrent)
        let update = try accepted(PublishRule.decide(channel: channel(lifecycle: .idle), event: try event(), existing: nil, nowMillis: now))
        #expect(update.lifecycle == .idle)
        #expect(update.becomesCurrent)
    }

    @Test func aClosedChannelTakesNothing() throws {
        #expect(throws: StoreError.channelClosed("m")) {
            try PublishRule.decide(channel: channel(open: false), event: try event(), existing: nil, nowMillis: now)
        }
    }

    @Test func payloadLimitsDependOnTheModeAndKind() throws {
        #expect(PublishRule.payloadLimit(mode: .broadcast, kind: .update) == 5120)
        #expect(PublishRule.payloadLimit(mode: .broadcast, kind: .start) == 4096)
        #expect(PublishRule.payloadLimit(mode: .hybrid, kind: .update) == 4096)
        #expect(PublishRule.payloadLimit(mode: .fanout, kind: .end) == 4096)
        let big = try event(pad: 4500)
        #expect(throws: StoreError.payloadTooLarge(size: big.render(timestamp: now / 1000).count, limit: 4096, broadcast: false)) {
            try PublishRule.decide(channel: channel(mode: .fanout), event: big, existing: nil, nowMillis: now)
        }
        let a = try accepted(PublishRule.decide(channel: channel(mode: .broadcast), event: big, existing: nil, nowMillis: now))
        #expect(a.limit == 5120)
        #expect(a.broadcastState == .pending)
    }

    @Test func theBroadcastPartIsPendingOnlyForNonStartEventsOfBroadcastModes() throws {
        for mode in ChannelMode.allCases {
            for kind in LiveActivityEventKind.allCases {
                let ch = channel(mode: mode, lifecycle: .started)
                let a = try accepted(PublishRule.decide(channel: ch, event: try event(kind), existing: nil, nowMillis: now))
                #expect(a.broadcastState == (mode != .fanout && kind != .start ? .pending : .none), "\(mode) \(kind)")
            }
        }
    }

    @Test func anIdempotencyKeyReplaysForADayThenIsForgotten() throws {
        let ch = channel(lifecycle: .ended)
        let recent = PublishRule.KeyedEvent(id: "evt_a", createdAtMillis: now - PublishRule.idempotencyWindowMillis + 1)
        // A replay wins over every other rule: the first answer is repeated.
        #expect(
            try PublishRule.decide(channel: ch, event: try event(.update), existing: recent, nowMillis: now) == .replay(eventID: "evt_a"))
        let old = PublishRule.KeyedEvent(id: "evt_a", createdAtMillis: now - PublishRule.idempotencyWindowMillis)
        let a = try accepted(PublishRule.decide(channel: channel(), event: try event(), existing: old, nowMillis: now))
        #expect(a.forgetKeyOf == "evt_a")
        #expect(try accepted(PublishRule.decide(channel: channel(), event: try event(), existing: nil, nowMillis: now)).forgetKeyOf == nil)
    }

    @Test func theRecordCarriesTheDecision() throws {
        let ch = channel(mode: .hybrid, lastSeq: 2)
        let e = try event()
        let a = try accepted(PublishRule.decide(channel: ch, event: e, existing: nil, nowMillis: now))
        let r = a.record(id: "evt_x", channel: ch, event: e, createdAtMillis: now)
        #expect(r.seq == 3 && r.state == .queued && r.broadcastState == .pending && r.channelNum == 7 && r.channelID == "m")
        #expect(r.payload == a.payload && r.priority == e.effectivePriority && r.createdAtMillis == now)
    }
}

@Suite struct ShardTests {
    @Test func aTokenAlwaysFallsInTheSameShardAndTheShardsAreUsed() {
        var seen = Set<Int>()
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<5_000 {
            let t = (0..<32).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let s = Shards.shard(of: t)
            #expect(s == Shards.shard(of: t))
            #expect((0..<Shards.count).contains(s))
            seen.insert(s)
        }
        #expect(seen.count == Shards.count)
        // FNV-1a (64 bit) of the empty input and of one zero byte: fixed forever (stored by
        // a second backend with each row).
        #expect(Shards.shard(of: []) == Int(0xcbf2_9ce4_8422_2325 % UInt64(Shards.count)))
        #expect(Shards.shard(of: [0]) == Int((0xcbf2_9ce4_8422_2325 &* 0x0000_0100_0000_01b3 as UInt64) % UInt64(Shards.count)))
    }

    @Test func aShardSetHoldsItsShardsOnly() {
        let last = Shards.count - 1
        let s = ShardSet([1, 5, last, Shards.count, -1])
        #expect(s.contains(1) && s.contains(5) && s.contains(last))
        #expect(!s.contains(0) && !s.contains(Shards.count) && !s.contains(-1))
        #expect(!s.isAll && ShardSet.all.isAll && ShardSet([]).isEmpty)
        #expect(s.description == "1,5,\(last)")
        #expect(ShardSet.all.holds(token: [1, 2, 3]))
    }
}
