import Foundation
import HeraldCore
import HeraldCrypto
import HeraldPostgresStore
import HeraldStore
import HeraldTestSupport
import Testing

@testable import HeraldWebhooks

/// Two workers on one PostgreSQL database: both write reports to the shared outbox, one
/// posts at a time, and the other takes over when it stops.
@Suite struct WebhookWorkersTests {
    func delivered(_ m: MetricsRegistry) -> Double {
        let line = m.render().split(separator: "\n").first {
            $0.hasPrefix(#"herald_webhook_deliveries_total{result="delivered",type="channel.closed"}"#)
        }
        return line.flatMap { Double($0.split(separator: " ").last ?? "") } ?? 0
    }

    func waitFor(_ done: () -> Bool) throws {
        let deadline = Date(timeIntervalSinceNow: 20)
        while !done() && Date() < deadline { usleep(10_000) }
    }

    @Test func oneWorkerPostsAtATimeAndAnotherTakesOver() throws {
        let url = try PostgresCluster.shared().makeDatabase("webhooks")
        let stores = [try PostgresStore(url: url, connections: 3), try PostgresStore(url: url, connections: 3)]
        defer { for s in stores { s.close() } }
        let key = SecureRandom.bytes(32)
        var c = WebhookConfig()
        c.pollInterval = 0.05
        c.dispatchLeaseMillis = 3_000  // renewed every second; a late renewal under load would split the posts
        let metrics = [MetricsRegistry(), MetricsRegistry()]
        let hubs = try (0..<2).map { i in
            WebhookHub(store: stores[i], box: try SecretBox(key: key), config: c, metrics: metrics[i], logger: .discard)
        }
        let rx = try WebhookReceiver()
        _ = try hubs[0].create(url: rx.url, events: ["channel.closed"], channels: ["*"])
        for h in hubs { h.start() }
        var stopped = [false, false]
        defer { for (i, h) in hubs.enumerated() where !stopped[i] { h.stop() } }
        for i in 0..<20 { hubs[i % 2].channelClosed(channel: "c\(i)", why: "deleted") }
        var posts = rx.wait { $0.count >= 20 }
        #expect(posts.count == 20)
        // A post is recorded by the receiver before the hub counts its answer.
        try waitFor { metrics.map(delivered).reduce(0, +) >= 20 }
        #expect(Set(posts.compactMap { $0.json["channel"]?.stringValue }).count == 20, "each once")
        let counts = metrics.map(delivered)
        #expect(counts.sorted() == [0, 20], "one worker posted them all: \(counts)")
        // The poster stops (giving the right back); the other posts what comes next.
        let poster = counts[0] == 20 ? 0 : 1
        hubs[poster].stop()
        stopped[poster] = true
        for i in 20..<25 { hubs[1 - poster].channelClosed(channel: "c\(i)", why: "deleted") }
        posts = rx.wait { $0.count >= 25 }
        #expect(posts.count == 25)
        try waitFor { delivered(metrics[1 - poster]) >= 5 }
        #expect(delivered(metrics[1 - poster]) == 5)
        #expect(Set(posts.compactMap { $0.delivery }).count == 25)
    }
}
