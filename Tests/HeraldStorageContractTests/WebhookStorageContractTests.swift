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
