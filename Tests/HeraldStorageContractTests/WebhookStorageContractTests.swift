import Foundation
import HeraldCore
import HeraldStore
import Testing

/// Webhooks and their outbox, the same on both backends.
@Suite struct WebhookStorageContractTests {
    func row(_ w: String, _ n: Int, at ms: Int64 = 1_796_000_000_000) -> NewWebhookDelivery {
        NewWebhookDelivery(webhookID: w, type: "channel.closed", payload: #"{"channel":"c\#(n)","why":"deleted"}"#, createdAtMillis: ms)
    }

    @Test(arguments: Backend.allCases) func webhooksAreCreatedListedAndDeletedWithTheirDeliveries(_ b: Backend) throws {
        let f = try Fixture(b)
        let s = f.storage
        let a = try s.createWebhook(url: "https://a.example/h", events: ["event.finished"], channels: ["m-*"], sealedSecret: [1, 2, 3])
        f.clock.advance(by: 1)
        let c = try s.createWebhook(url: "http://127.0.0.1:1/h", events: ["channel.closed"], channels: ["*"], sealedSecret: [4])
        #expect(a.id.hasPrefix("whk_") && a.id != c.id)
        #expect(try s.webhooks() == [a, c])
        #expect(a.sealedSecret == [1, 2, 3] && a.events == ["event.finished"] && a.channels == ["m-*"])
        #expect(a.wants(type: "event.finished", channel: "m-1") && !a.wants(type: "event.finished", channel: "x"))
        #expect(!a.wants(type: "channel.closed", channel: "m-1") && c.wants(type: "channel.closed", channel: "any"))
        let ids = try s.appendWebhookDeliveries([row(a.id, 1), row(c.id, 2), row(a.id, 3)])
        #expect(ids.count == 3 && ids == ids.sorted() && Set(ids).count == 3)
        #expect(try s.webhookOutboxStats().count == 3)
        #expect(try s.deleteWebhook(id: a.id) == a)
        #expect(try s.deleteWebhook(id: a.id) == nil)
        #expect(try s.webhooks() == [c])
        #expect(try s.webhookDeliveries(afterID: 0, limit: 10).map(\.id) == [ids[1]], "its deliveries went with it")
        #expect(try s.appendWebhookDeliveries([row(a.id, 4)]) == [0], "a row for a deleted webhook is skipped")
    }

    @Test(arguments: Backend.allCases) func theOutboxKeepsOrderRetriesAndRemovals(_ b: Backend) throws {
        let f = try Fixture(b)
        let s = f.storage
        let w = try s.createWebhook(url: "https://a.example/h", events: ["channel.closed"], channels: ["*"], sealedSecret: [9])
        let ids = try s.appendWebhookDeliveries((0..<5).map { row(w.id, $0, at: 1_796_000_000_000 + Int64($0)) })
        let rows = try s.webhookDeliveries(afterID: 0, limit: 10)
        #expect(rows.map(\.id) == ids)
        #expect(rows[0].payload == #"{"channel":"c0","why":"deleted"}"# && rows[0].type == "channel.closed")
        #expect(rows[0].attempts == 0 && rows[0].notBeforeMillis == rows[0].createdAtMillis)
        #expect(try s.webhookDeliveries(afterID: ids[2], limit: 10).map(\.id) == Array(ids[3...]))
        #expect(try s.webhookDeliveries(afterID: 0, limit: 2).map(\.id) == Array(ids[..<2]))
        try s.rescheduleWebhookDelivery(id: ids[0], attempts: 3, notBeforeMillis: 1_796_000_099_000)
        let again = try s.webhookDeliveries(afterID: 0, limit: 1)[0]
        #expect(again.attempts == 3 && again.notBeforeMillis == 1_796_000_099_000)
        let stats = try s.webhookOutboxStats()
        #expect(stats.count == 5 && stats.oldestCreatedAtMillis == 1_796_000_000_000)
        try s.removeWebhookDeliveries(ids: [ids[0], ids[3]])
        #expect(try s.webhookDeliveries(afterID: 0, limit: 10).map(\.id) == [ids[1], ids[2], ids[4]])
        #expect(try s.webhookOutboxStats().oldestCreatedAtMillis == 1_796_000_000_001)
        let more = try s.appendWebhookDeliveries([row(w.id, 9)])
        #expect(more[0] > ids[4], "ids keep increasing")
    }

    @Test(arguments: Backend.allCases) func oneDispatcherHoldsTheRightUntilItLetsGo(_ b: Backend) throws {
        let f = try Fixture(b)
        #expect(try f.storage.claimWebhookDispatch(holder: "a", millis: 60_000))
        #expect(try f.storage.claimWebhookDispatch(holder: "a", millis: 60_000), "renewed")
        guard b == .postgres else { return }  // one process on SQLite: always its own
        let other = try f.secondWorker()
        #expect(try !other.claimWebhookDispatch(holder: "b", millis: 60_000))
        try f.storage.releaseWebhookDispatch(holder: "a")
        #expect(try other.claimWebhookDispatch(holder: "b", millis: 50))
        usleep(120_000)
        #expect(try f.storage.claimWebhookDispatch(holder: "a", millis: 60_000), "b's lease expired by the database's clock")
    }
}

/// Reports recorded in the transaction of their fact, and turned into deliveries.
@Suite struct WebhookReportContractTests {
    @Test(arguments: Backend.allCases) func aPruneReportsExactlyTheTokensItDeletedWhileAWebhookWantsThem(_ b: Backend) throws {
        let f = try Fixture(b)
        let s = f.storage
        let ch = try f.channel("m")
        let tokens = (0..<3).map { i in [UInt8](repeating: UInt8(i + 1), count: 32) }
        _ = try s.batch(channelID: "m", subscribe: tokens.map { SubscriptionInput(token: $0) }, unsubscribe: [])
        let then = f.clock.nowMillis() + 1
        f.clock.advance(by: 5)
        let items = tokens.map { (kind: SubscriptionKind.activity, token: $0, beforeMillis: then) }
        // No webhook: nothing is recorded.
        #expect(try s.pruneReporting(channelNum: ch.num, [items[0]], reason: "unregistered") == 1)
        #expect(try s.webhookReportCount() == 0)
        _ = try s.createWebhook(url: "https://a.example/h", events: ["subscription.pruned"], channels: ["*"], sealedSecret: [1])
        _ = try s.register(channelID: "m", token: tokens[2], kind: .activity, replaces: nil, expiresAt: nil)  // again, after APNs' time
        #expect(try s.pruneReporting(channelNum: ch.num, Array(items[1...]), reason: "bad_device_token") == 1)
        #expect(try s.webhookReportCount() == 1)
        let seen = Locked<[WebhookReport]>([])
        let n = try s.convertWebhookReports(limit: 10) { r in
            seen.set(r)
            return []
        }
        #expect(n == 1)
        let r = try #require(seen.get().first)
        #expect(r.type == "subscription.pruned" && r.channel == "m")
        let payload = try JSON.parse(Array(r.payload.utf8))
        #expect(payload["tokens"] == .array([.string(Hex.encode(tokens[1]))]), "not the token registered again")
        #expect(payload["reason"] == "bad_device_token")
        #expect(try s.webhookReportCount() == 0, "converted reports are gone")
    }

    @Test(arguments: Backend.allCases) func aFinishAndACloseAreRecordedAndConvertedWithTheirDeliveries(_ b: Backend) throws {
        let f = try Fixture(b)
        let s = f.storage
        let ch = try f.channel("m")
        let w = try s.createWebhook(
            url: "https://a.example/h", events: ["event.finished", "channel.closed"], channels: ["m"], sealedSecret: [1])
        let e = try f.publish().event
        let lease = try #require(try s.acquireLease(channelNum: ch.num))
        try waitFor { done in
            s.finishEventReporting(
                eventID: e.id, shards: lease.shards, state: .done, counters: EventCounters(), reason: nil, supersededBy: nil,
                completion: done)
        }
        // A second finish of a finished event records nothing more.
        f.clock.advance(by: 1)
        try waitFor { done in
            s.finishEventReporting(
                eventID: e.id, shards: lease.shards, state: .failed, counters: EventCounters(), reason: "x", supersededBy: nil,
                completion: done)
        }
        try s.recordWebhookReport(type: "channel.closed", channel: "m", payload: #"{"channel":"m","why":"deleted"}"#)
        #expect(try s.webhookReportCount() == 2)
        let n = try s.convertWebhookReports(limit: 10) { reports in
            reports.map { NewWebhookDelivery(webhookID: w.id, type: $0.type, payload: $0.payload, createdAtMillis: $0.createdAtMillis) }
        }
        #expect(n == 2)
        let rows = try s.webhookDeliveries(afterID: 0, limit: 10)
        #expect(rows.map(\.type) == ["event.finished", "channel.closed"])
        #expect(try JSON.parse(Array(rows[0].payload.utf8))["event_id"]?.stringValue == e.id)
        #expect(try s.webhookReportCount() == 0)
    }

    @Test(arguments: Backend.allCases) func aCloseRecordsItsReportAndTheStoppedEventsInItsTransaction(_ b: Backend) throws {
        let f = try Fixture(b)
        let s = f.storage
        try f.channel("m")
        _ = try s.createWebhook(
            url: "https://a.example/h", events: ["event.finished", "channel.closed"], channels: ["m"], sealedSecret: [1])
        let queued = try f.publish().event
        let (closed, stopped) = try s.closeChannelReporting(id: "m", why: "expired")
        #expect(!closed.isOpen && stopped == [queued.id])
        let seen = Locked<[WebhookReport]>([])
        _ = try s.convertWebhookReports(limit: 10) { r in
            seen.set(r)
            return []
        }
        let reports = seen.get()
        #expect(reports.map(\.type).sorted() == ["channel.closed", "event.finished"], "\(reports)")
        let close = try #require(reports.first { $0.type == "channel.closed" })
        #expect(WebhookEventProbe.why(close.payload) == "expired" && close.channel == "m")
        let finish = try #require(reports.first { $0.type == "event.finished" })
        #expect(try JSON.parse(Array(finish.payload.utf8))["event_id"]?.stringValue == queued.id)
        // Closing a closed channel records nothing more.
        _ = try s.closeChannelReporting(id: "m", why: "deleted")
        #expect(try s.webhookReportCount() == 0)
    }
}

/// Reads a stored `channel.closed` payload's `why` (the outbox keeps JSON text).
enum WebhookEventProbe {
    static func why(_ payload: String) -> String? { (try? JSON.parse(Array(payload.utf8)))?["why"]?.stringValue }
}
