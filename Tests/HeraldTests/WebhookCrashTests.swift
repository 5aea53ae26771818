import Foundation
import HeraldCore
import HeraldSQL
import HeraldSimulator
import HeraldTestSupport
import Testing

@Suite(.serialized) struct WebhookCrashTests {
    /// At least once across a SIGKILL: deliveries in the outbox when `herald serve` is
    /// killed (the receiver was failing them) are delivered after the restart, with the
    /// same `Herald-Delivery` ids, in order.
    @Test func deliveriesInTheOutboxSurviveASIGKILLOfServe() throws {
        let sim = try SimFixture()
        let db = sim.dir + "/herald.db"
        let up = Locked(false)
        let rx = try WebhookReceiver { _ in up.get() ? 200 : 503 }
        var serve = try ServeProcess(db: db, sim: sim)
        let hook = try serve.call(
            "POST", "v1/webhooks", ["url": .string(rx.url), "events": ["event.finished", "channel.closed"], "channels": ["final"]])
        #expect(hook.status == 201)
        #expect(
            try serve.call("POST", "v1/channels", ["id": "final", "bundle_id": "com.example.app", "environment": "sandbox"]).status == 201)
        #expect(try serve.call("PUT", "v1/channels/final/subscriptions/\(makeTokens(1)[0])").status == 201)
        let published = try serve.call("POST", "v1/channels/final/events", ["aps": ["event": "update", "content-state": ["home": 1]]])
        let eventID = try #require(published.json?["event_id"]?.stringValue)
        var state = ""
        let end = Date(timeIntervalSinceNow: 30)
        while state != "done" && Date() < end {
            state = try serve.call("GET", "v1/channels/final/events/\(eventID)").json?["state"]?.stringValue ?? ""
            if state != "done" { usleep(20_000) }
        }
        #expect(try serve.call("DELETE", "v1/channels/final").status == 200)
        // Both deliveries are in the table and the first was tried (and refused) once.
        let outbox = try Database(path: db)
        let deadline = Date(timeIntervalSinceNow: 30)
        func waiting() -> Int64 { (try? outbox.read { c in try c.queryValue("SELECT count(*) FROM webhook_deliveries")?.int64Value }) ?? 0 }
        while (waiting() < 2 || rx.posts.get().isEmpty) && Date() < deadline { usleep(20_000) }
        #expect(waiting() == 2)
        serve.kill()
        // Posts made before the kill (all refused); none come from the dead process.
        let before = rx.posts.get()
        try #require(!before.isEmpty)
        up.set(true)

        serve = try ServeProcess(db: db, sim: sim)
        let posts = rx.wait(timeout: 60) { $0.count >= before.count + 2 }
        let after = Array(posts[before.count...])
        #expect(after.count == 2, "\(after.map(\.json.text))")
        #expect(after.first?.delivery == before[0].delivery, "the same delivery id after the restart")
        #expect(after.map { $0.json["type"]?.stringValue ?? "" } == ["event.finished", "channel.closed"])
        #expect(after.first?.json["event_id"]?.stringValue == eventID)
        let drained = Date(timeIntervalSinceNow: 10)
        while waiting() > 0 && Date() < drained { usleep(20_000) }
        #expect(waiting() == 0)
        outbox.close()
        serve.stop()
    }
}
