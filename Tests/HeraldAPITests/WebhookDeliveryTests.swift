import Foundation
import HeraldAPI
import HeraldCore
import HeraldCrypto
import HeraldSimulator
import HeraldStore
import HeraldTestSupport
import HeraldWebhooks
import Testing

/// A live API whose webhooks run: the hub started, observing the engine, posting to real
/// receivers on loopback. On `testStorage` (SQLite, or PostgreSQL with
/// HERALD_TEST_STORAGE=postgres).
final class WebhookFixture {
    let api: APIFixture
    let hub: WebhookHub

    init(simulator: ((inout SimulatorFaults) -> Void)? = nil, configure: (inout WebhookConfig) -> Void = { _ in }) throws {
        var c = WebhookConfig()
        c.schedule = WebhookRetrySchedule(first: 0.1, cap: 0.4)
        c.pollInterval = 0.05
        configure(&c)
        let config = c
        let made = Locked<WebhookHub?>(nil)
        api = try APIFixture(storage: testStorage) { p in
            var ac = APIConfig()
            ac.adminToken = Redacted(p.adminToken)
            let hub = WebhookHub(
                store: p.storage, box: try SecretBox(key: SecureRandom.bytes(32)), config: config, metrics: p.metrics, logger: .discard)
            p.engine.observer.set(hub)
            hub.start()
            made.set(hub)
            return APIServer(
                config: ac, store: p.storage, engine: p.engine, channelManagers: p.channelManagers, metrics: p.metrics, logger: .discard,
                webhooks: hub)
        }
        hub = made.get()!
        if let simulator {
            var f = api.sim.sim.faults
            simulator(&f)
            api.sim.sim.setFaults(f)
        }
    }

    deinit {
        api.fanout.engine.observer.set(nil)
        hub.stop()
    }

    /// Creates a webhook; returns its id and secret.
    func webhook(_ url: String, _ events: [String], channels: [String]) throws -> (id: String, secret: String) {
        let r = try api.admin(
            "POST", "/v1/webhooks",
            json: ["url": .string(url), "events": .array(events.map(JSON.string)), "channels": .array(channels.map(JSON.string))])
        try #require(r.status == 201, "create webhook: \(r.status) \(r.text)")
        return (try #require(r.json?["id"]?.stringValue), try #require(r.json?["secret"]?.stringValue))
    }

    func counter(_ name: String, _ labels: String) -> Double {
        let line = api.fanout.metrics.render().split(separator: "\n").first { $0.hasPrefix("\(name){\(labels)}") }
        return line.flatMap { Double($0.split(separator: " ").last ?? "") } ?? 0
    }
}

@Suite struct WebhookDeliveryTests {
    static let all = ["event.finished", "subscription.pruned", "channel.closed", "prune_guard.tripped"]

    /// The receiver's recipe from docs/api.md: HMAC-SHA256(secret, "<t>.<body>") in hex,
    /// compared with `v1` of `Herald-Signature`, `t` within 5 minutes.
    static func verify(_ p: WebhookReceiver.Post, secret: String) -> Bool {
        guard let header = p.signature else { return false }
        var t: String?
        var v1: String?
        for part in header.split(separator: ",") {
            let kv = part.split(separator: "=", maxSplits: 1).map(String.init)
            if kv.count == 2 && kv[0] == "t" { t = kv[1] }
            if kv.count == 2 && kv[0] == "v1" { v1 = kv[1] }
        }
        guard let t, let v1, let ts = Int64(t), abs(Int64(Date().timeIntervalSince1970) - ts) <= 300 else { return false }
        let mac = Digest.hmacSHA256(key: Array(secret.utf8), message: Array((t + ".").utf8) + p.body)
        return Hex.encode(mac) == v1
    }

    @Test func finishedEventsAndClosesArriveSignedWithTheDocumentedShape() throws {
        let fx = try WebhookFixture()
        let rx = try WebhookReceiver()
        let ch = unique("wh-sign")
        try fx.api.createChannel(ch)
        let (_, secret) = try fx.webhook(rx.url, Self.all, channels: [ch])
        _ = try fx.webhook(rx.url, ["event.finished"], channels: ["other-*"])  // not this channel
        try fx.api.subscribe(ch, freshToken())
        let event = try #require(try fx.api.publish(ch, update()).json?["event_id"]?.stringValue)
        _ = try fx.api.waitFinished(ch, event)
        #expect(try fx.api.admin("DELETE", "/v1/channels/\(ch)").status == 200)
        let posts = rx.wait { $0.count >= 2 }
        try #require(posts.count >= 2, "\(posts.count) posts")
        #expect(posts.count == 2, "the webhook of other-* got nothing")
        for p in posts {
            #expect(Self.verify(p, secret: secret), "signature of \(p.json.text)")
            #expect(!Self.verify(p, secret: secret + "x"))
            #expect(WebhookSignature.verify(header: p.signature ?? "", secret: Array(secret.utf8), body: p.body, now: nowSeconds()))
            #expect(p.delivery == p.json["id"]?.stringValue)
            #expect(p.json["created_at"]?.intValue.map { abs($0 - nowSeconds()) < 60 } == true)
        }
        let finished = posts[0].json
        #expect(finished["type"] == "event.finished")
        #expect(finished["channel"]?.stringValue == ch)
        #expect(finished["event_id"]?.stringValue == event)
        #expect(finished["state"] == "done")
        #expect(finished["seq"]?.intValue == 1)
        #expect(finished["targets"]?.intValue == 1 && finished["sent"]?.intValue == 1)
        #expect(finished["failed"]?.intValue == 0 && finished["pruned"]?.intValue == 0)
        #expect(posts[1].json["type"] == "channel.closed")
        #expect(posts[1].json["why"] == "deleted")
        // The receiver records a post before the hub counts its answer.
        let counted = Date(timeIntervalSinceNow: 10)
        while fx.counter("herald_webhook_deliveries_total", #"result="delivered",type="channel.closed""#) < 1 && Date() < counted {
            usleep(10_000)
        }
        #expect(fx.counter("herald_webhook_deliveries_total", #"result="delivered",type="event.finished""#) == 1)
    }

    @Test func failuresAreRetriedInOrderPerWebhook() throws {
        let fx = try WebhookFixture()
        // The first three tries fail (500), then everything is taken.
        let rx = try WebhookReceiver { $0 < 3 ? 500 : 200 }
        let ch = unique("wh-order")
        try fx.api.createChannel(ch)
        _ = try fx.webhook(rx.url, ["event.finished"], channels: ["wh-order-*"])
        try fx.api.subscribe(ch, freshToken())
        var events: [String] = []
        for i in 0..<5 {
            let id = try #require(try fx.api.publish(ch, start(["n": .int(Int64(i))])).json?["event_id"]?.stringValue)
            _ = try fx.api.waitFinished(ch, id)
            events.append(id)
        }
        let posts = rx.wait { p in p.filter { _ in true }.count >= 8 }
        #expect(posts.count == 8, "3 failed tries and 5 deliveries")
        // The first delivery was tried 4 times with the same id before any other went.
        #expect(Set(posts.prefix(4).map(\.delivery)).count == 1)
        let delivered = posts.dropFirst(3).map { $0.json["event_id"]?.stringValue ?? "" }
        #expect(delivered == events, "in publish order")
        #expect(fx.counter("herald_webhook_deliveries_total", #"result="failed",type="event.finished""#) == 3)
    }

    @Test func aDeadReceiverIsRetriedUntilTheDeadlineThenDroppedAndCounted() throws {
        let fx = try WebhookFixture(configure: { $0.schedule = WebhookRetrySchedule(first: 0.1, cap: 0.2, giveUpAfter: 1.5) })
        let dead = try WebhookReceiver()
        let url = dead.url
        dead.server.stop()  // nothing listens there any more: connection refused
        let ch = unique("wh-dead")
        try fx.api.createChannel(ch)
        _ = try fx.webhook(url, ["channel.closed"], channels: [ch])
        #expect(try fx.api.admin("DELETE", "/v1/channels/\(ch)").status == 200)
        let deadline = Date(timeIntervalSinceNow: 20)
        while fx.counter("herald_webhook_dropped_total", #"reason="expired""#) < 1 && Date() < deadline { usleep(50_000) }
        #expect(fx.counter("herald_webhook_dropped_total", #"reason="expired""#) == 1)
        #expect(fx.counter("herald_webhook_deliveries_total", #"result="failed",type="channel.closed""#) >= 3)
        #expect(try fx.api.fanout.storage.webhookOutboxStats().count == 0, "a dropped delivery leaves the table")
    }

    @Test func tenThousandPrunedTokensArriveInBatchesOfAtMostAThousand() throws {
        let fx = try WebhookFixture(simulator: { $0.deadTokenRate = 1 })
        let rx = try WebhookReceiver()
        let ch = unique("wh-prune")
        try fx.api.createChannel(ch)
        _ = try fx.webhook(rx.url, ["subscription.pruned", "event.finished"], channels: [ch])
        let tokens = (0..<10_000).map { _ in freshToken() }
        let b = try fx.api.admin("POST", "/v1/channels/\(ch)/subscriptions:batch", json: ["subscribe": .array(tokens.map(JSON.string))])
        try #require(b.status == 200, "\(b.status) \(b.text)")
        let event = try #require(try fx.api.publish(ch, update()).json?["event_id"]?.stringValue)
        let progress = try fx.api.waitFinished(ch, event)
        #expect(progress["pruned"]?.intValue == 10_000)
        let posts = rx.wait(timeout: 60) { p in
            p.contains { $0.json["type"] == "event.finished" }
                && p.reduce(0) { $0 + ($1.json["tokens"]?.arrayValue?.count ?? 0) } >= 10_000
        }
        let batches = posts.filter { $0.json["type"] == "subscription.pruned" }
        let got = batches.flatMap { $0.json["tokens"]?.arrayValue?.compactMap(\.stringValue) ?? [] }
        #expect(Set(got) == Set(tokens))
        #expect(got.count == 10_000, "each token once")
        #expect(batches.allSatisfy { ($0.json["tokens"]?.arrayValue?.count ?? 0) <= 1_000 })
        #expect(batches.count >= 10)
        #expect(batches.allSatisfy { $0.json["reason"] == "unregistered" && $0.json["channel"]?.stringValue == ch })
    }

    @Test func theGuardTripIsReported() throws {
        let fx = try WebhookFixture(simulator: { $0.badTokenRate = 1 })
        let rx = try WebhookReceiver()
        let ch = unique("wh-guard")
        try fx.api.createChannel(ch)
        _ = try fx.webhook(rx.url, ["prune_guard.tripped"], channels: [ch])
        let tokens = (0..<200).map { _ in freshToken() }
        _ = try fx.api.admin("POST", "/v1/channels/\(ch)/subscriptions:batch", json: ["subscribe": .array(tokens.map(JSON.string))])
        let event = try #require(try fx.api.publish(ch, update()).json?["event_id"]?.stringValue)
        _ = try fx.api.waitFinished(ch, event)
        let posts = rx.wait { !$0.isEmpty }
        try #require(posts.count == 1)
        #expect(posts[0].json["type"] == "prune_guard.tripped")
        #expect(posts[0].json["event_id"]?.stringValue == event)
        #expect(posts[0].json["share"]?.numberValue == 1)
    }
}
