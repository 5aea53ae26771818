import Testing

@testable import HeraldWebhooks

/// The outbox's decisions, driven without I/O: order per webhook, retries, the bound, the
/// merging of pruned tokens, restarts.
@Suite struct WebhookOutboxTests {
    func finished(_ seq: Int64) -> WebhookEvent {
        .eventFinished(channel: "m", eventID: "e\(seq)", seq: seq, state: "done", targets: 1, sent: 1, failed: 0, pruned: 0)
    }

    func sends(_ actions: [WebhookOutbox.Action]) -> [WebhookDelivery] {
        actions.compactMap { if case .send(let d) = $0 { d } else { nil } }
    }

    @Test func onlyTheOldestDeliveryOfAWebhookGoesAndTheRestWaitBehindItsRetries() {
        var o = WebhookOutbox()
        let first = o.enqueue(finished(1), for: ["w1", "w2"], now: 0)
        #expect(sends(first).map(\.webhookID) == ["w1", "w2"])
        let w1Head = sends(first)[0]
        #expect(sends(o.enqueue(finished(2), for: ["w1"], now: 1)).isEmpty, "w1's first is in flight")
        // It fails: rescheduled; the second waits behind it, nothing is sent now.
        let failed = o.answered(id: w1Head.id, webhookID: "w1", .failed(retryAfter: nil), now: 2, unit: 0)
        guard case .update(let d) = failed.first else {
            Issue.record("no update: \(failed)")
            return
        }
        #expect(d.attempts == 1 && d.notBefore == 4.5)
        #expect(sends(failed).isEmpty)
        #expect(sends(o.tick(now: 4)).isEmpty)
        #expect(o.nextDue() == 4.5)
        let again = sends(o.tick(now: 4.5))
        #expect(again.map(\.id) == [w1Head.id])
        let done = o.answered(id: w1Head.id, webhookID: "w1", .delivered, now: 5, unit: 0)
        #expect(done.first == .delivered(id: w1Head.id))
        #expect(sends(done).map(\.event) == [finished(2)], "then the next, in order")
    }

    @Test func aDeliveryIsDroppedAfter24HoursAndTheNextGoes() {
        var o = WebhookOutbox()
        let d = sends(o.enqueue(finished(1), for: ["w"], now: 0))[0]
        _ = o.enqueue(finished(2), for: ["w"], now: 0)
        let a = o.answered(id: d.id, webhookID: "w", .failed(retryAfter: nil), now: 86_399, unit: 1)
        #expect(a.first == .drop(id: d.id, webhookID: "w", reason: .expired, tokens: 0))
        #expect(sends(a).map(\.event) == [finished(2)])
        #expect(o.count == 1)
    }

    @Test func inFlightIsBoundedOverAllWebhooks() {
        var o = WebhookOutbox(maxInFlight: 3)
        let a = o.enqueue(finished(1), for: (0..<10).map { "w\($0)" }, now: 0)
        #expect(sends(a).count == 3)
        #expect(o.inFlightCount == 3)
        let next = o.answered(id: sends(a)[0].id, webhookID: sends(a)[0].webhookID, .delivered, now: 1, unit: 0)
        #expect(sends(next).count == 1)
    }

    @Test func tenThousandPrunedTokensBecomeDeliveriesOfAtMostAThousand() {
        var o = WebhookOutbox()
        let tokens = (0..<10_000).map { String($0) }
        let a = o.enqueue(.subscriptionPruned(channel: "m", tokens: tokens, reason: "Unregistered"), for: ["w"], now: 0)
        let stored = a.compactMap { if case .store(let d) = $0 { d } else { nil } }
        #expect(stored.count == 10)
        var all: [String] = []
        for d in stored {
            guard case .subscriptionPruned(_, let t, _) = d.event else { continue }
            #expect(t.count <= 1_000)
            all += t
        }
        #expect(all == tokens)
    }

    @Test func aFullOutboxMergesPrunedTokensAndDropsAndCountsTheRest() {
        var o = WebhookOutbox(capacity: 2)
        _ = o.enqueue(finished(1), for: ["w"], now: 0)  // in flight
        let p1 = o.enqueue(.subscriptionPruned(channel: "m", tokens: ["a"], reason: "Unregistered"), for: ["w"], now: 1)
        #expect(p1.count == 1, "stored, not sent: \(p1)")
        #expect(o.count == 2)
        // Full: tokens of the same channel and reason join the waiting delivery...
        let p2 = o.enqueue(.subscriptionPruned(channel: "m", tokens: ["b", "c"], reason: "Unregistered"), for: ["w"], now: 2)
        guard case .update(let merged) = p2.first, case .subscriptionPruned(_, let t, _) = merged.event else {
            Issue.record("not merged: \(p2)")
            return
        }
        #expect(t == ["a", "b", "c"])
        // ...up to 1 000; past that, and any other event, are dropped and counted.
        let many = (0..<1_500).map { "t\($0)" }
        let p3 = o.enqueue(.subscriptionPruned(channel: "m", tokens: many, reason: "Unregistered"), for: ["w"], now: 3)
        #expect(p3.last == .drop(id: nil, webhookID: "w", reason: .outboxFull, tokens: 503))
        #expect(o.enqueue(finished(2), for: ["w"], now: 4) == [.drop(id: nil, webhookID: "w", reason: .outboxFull, tokens: 0)])
        let other = o.enqueue(.subscriptionPruned(channel: "other", tokens: ["x"], reason: "Unregistered"), for: ["w"], now: 5)
        #expect(other == [.drop(id: nil, webhookID: "w", reason: .outboxFull, tokens: 1)], "another channel is not merged")
        #expect(o.count == 2)
    }

    @Test func aRestartResumesInOrderAndNewDeliveriesComeAfter() {
        let kept = [
            WebhookDelivery(id: 7, webhookID: "w", event: finished(2), createdAt: 5, attempts: 2, notBefore: 0),
            WebhookDelivery(id: 3, webhookID: "w", event: finished(1), createdAt: 1, attempts: 0, notBefore: 0),
        ]
        var o = WebhookOutbox(restored: kept)
        #expect(o.count == 2)
        #expect(sends(o.tick(now: 10)).map(\.id) == [3])
        let new = o.enqueue(finished(3), for: ["w"], now: 11)
        guard case .store(let d) = new.first else {
            Issue.record("\(new)")
            return
        }
        #expect(d.id == 8)
        #expect(o.oldestCreatedAt == 1)
    }

    @Test func deletingAWebhookDropsItsDeliveriesAndIgnoresALateAnswer() {
        var o = WebhookOutbox()
        let d = sends(o.enqueue(finished(1), for: ["w"], now: 0))[0]
        _ = o.enqueue(finished(2), for: ["w"], now: 0)
        let gone = o.removeWebhook("w")
        #expect(gone.count == 2)
        #expect(o.answered(id: d.id, webhookID: "w", .delivered, now: 1, unit: 0).isEmpty)
        #expect(o.count == 0)
    }
}
