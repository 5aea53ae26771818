import Foundation
import HeraldCore
import HeraldCrypto
import HeraldStore
import Testing

@testable import HeraldWebhooks

/// The hub over a real SQLite file, posting over real HTTPS to a receiver on 127.0.0.1.
@Suite struct WebhookHubTests {
    func counter(_ m: MetricsRegistry, _ name: String, _ labels: String) -> Double {
        let line = m.render().split(separator: "\n").first { $0.hasPrefix("\(name){\(labels)}") }
        return line.flatMap { Double($0.split(separator: " ").last ?? "") } ?? 0
    }

    @Test func anHTTPSReceiverIsReachedThroughTheCAFileAndRefusedWithoutIt() throws {
        let tls = try PythonTLSReceiver()
        defer { tls.stop() }
        let dir = NSTemporaryDirectory() + "herald-hub-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for trusted in [true, false] {
            let store = try Store(path: dir + "/\(trusted).db")
            defer { store.close() }
            let metrics = MetricsRegistry()
            var c = WebhookConfig()
            c.pollInterval = 0.05
            c.schedule = WebhookRetrySchedule(first: 0.1, cap: 0.2)
            if trusted { c.poster.caFile = tls.certFile }
            let hub = WebhookHub(
                store: store, box: try SecretBox(key: SecureRandom.bytes(32)), config: c, metrics: metrics, logger: .discard)
            hub.start()
            defer { hub.stop() }
            _ = try hub.create(url: "https://127.0.0.1:\(tls.port)/hook", events: ["channel.closed"], channels: ["*"])
            hub.channelClosed(channel: "c", why: "deleted")
            let label = trusted ? #"result="delivered",type="channel.closed""# : #"result="failed",type="channel.closed""#
            let deadline = Date(timeIntervalSinceNow: 20)
            while counter(metrics, "herald_webhook_deliveries_total", label) < 1 && Date() < deadline { usleep(20_000) }
            #expect(counter(metrics, "herald_webhook_deliveries_total", label) >= 1, "trusted: \(trusted)")
            if trusted {
                while (try store.webhookOutboxStats().count) > 0 && Date() < deadline { usleep(20_000) }
                #expect(try store.webhookOutboxStats().count == 0)
            } else {
                #expect(counter(metrics, "herald_webhook_deliveries_total", #"result="delivered",type="channel.closed""#) == 0)
                #expect(try store.webhookOutboxStats().count == 1, "kept for its retries")
            }
        }
    }

    @Test func aFullPendingQueueDropsAndCountsInsteadOfWaiting() throws {
        let dir = NSTemporaryDirectory() + "herald-hubq-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try Store(path: dir + "/h.db")
        defer { store.close() }
        let metrics = MetricsRegistry()
        var c = WebhookConfig()
        c.pendingLimit = 1_500
        // Not started: nothing drains the queue.
        let hub = WebhookHub(store: store, box: try SecretBox(key: SecureRandom.bytes(32)), config: c, metrics: metrics, logger: .discard)
        for i in 0..<3 {
            hub.add(.pruned(channelNum: 1, tokens: (0..<1_000).map { "t\(i)-\($0)" }, reason: "unregistered"))
        }
        hub.add(.guardTripped(channel: "c", eventID: "evt_x", share: 1))
        #expect(hub.pendingDepth == 1_500)
        #expect(hub.pending.count == 1, "pruned tokens of one channel and reason merge")
        #expect(counter(metrics, "herald_webhook_dropped_total", #"reason="queue_full""#) == 1_501)
    }
}

/// How reports become deliveries (no posting).
@Suite struct WebhookReportConversionTests {
    @Test func adjacentPrunedReportsMergeAndSplitAtAThousandAndARoomLimitDrops() throws {
        let dir = NSTemporaryDirectory() + "herald-conv-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try Store(path: dir + "/h.db")
        defer { store.close() }
        let metrics = MetricsRegistry()
        let hub = WebhookHub(store: store, box: try SecretBox(key: SecureRandom.bytes(32)), metrics: metrics, logger: .discard)
        func pruned(_ id: Int64, _ ch: String, _ n: Int, _ reason: String = "unregistered") -> WebhookReport {
            let tokens = JSON.array((0..<n).map { .string("\(ch)-\(id)-\($0)") })
            return WebhookReport(
                id: id, type: "subscription.pruned", channel: ch, payload: JSON.object(["tokens": tokens, "reason": .string(reason)]).text,
                createdAtMillis: 0)
        }
        let closed = WebhookReport(
            id: 4, type: "channel.closed", channel: "a", payload: #"{"channel":"a","why":"deleted"}"#, createdAtMillis: 0)
        let all = Webhook(
            id: "whk_1", url: "u", events: ["subscription.pruned", "channel.closed"], channels: ["*"], createdAtMillis: 0, sealedSecret: [])
        let onlyB = Webhook(id: "whk_2", url: "u", events: ["subscription.pruned"], channels: ["b"], createdAtMillis: 0, sealedSecret: [])
        let reports = [
            pruned(1, "a", 700), pruned(2, "a", 700), pruned(3, "a", 10, "bad_device_token"), closed, pruned(5, "a", 5), pruned(6, "b", 3),
        ]
        let rows = hub.deliveries(for: reports, webhooks: [all, onlyB], room: 100, nowMillis: 7)
        func tokens(_ r: NewWebhookDelivery) -> Int { (try? JSON.parse(Array(r.payload.utf8)))?["tokens"]?.arrayValue?.count ?? 0 }
        #expect(rows.map(\.webhookID) == ["whk_1", "whk_1", "whk_1", "whk_1", "whk_1", "whk_1", "whk_2"])
        #expect(
            rows.map(\.type) == Array(repeating: "subscription.pruned", count: 3) + ["channel.closed"]
                + Array(repeating: "subscription.pruned", count: 3))
        #expect(rows.prefix(3).map(tokens) == [1_000, 400, 10], "1,400 of one reason merged, split at 1,000; another reason apart")
        #expect(tokens(rows[4]) == 5, "not merged across the close")
        #expect(rows.allSatisfy { $0.createdAtMillis == 7 })
        let few = hub.deliveries(for: reports, webhooks: [all, onlyB], room: 2, nowMillis: 7)
        #expect(few.count == 2)
        let dropped = metrics.render().split(separator: "\n").first { $0.hasPrefix(#"herald_webhook_dropped_total{reason="outbox_full"}"#) }
        #expect(dropped?.hasSuffix(" 5") == true)
    }
}
