import Testing

@testable import HeraldNet
@testable import HeraldSimulator

@Suite struct SimDelayQueueTests {
    func fields(_ id: String) -> HeaderList { HeaderList([("apns-id", id)]) }

    /// Answers come out when due, in the order they were decided, each with its own fields
    /// and body, however many wait at once (the ring grows and keeps the order).
    @Test func answersLeaveWhenDueInTheirOrder() {
        var q = SimDelayQueue()
        #expect(q.nextDue == nil)
        for i in 0..<40 {
            q.push(
                due: 100 + UInt64(i), streamID: Int32(2 * i + 1), status: i % 2 == 0 ? 200 : 410, fields: fields("id-\(i)"),
                body: i % 2 == 0 ? [] : [UInt8(i)])
        }
        #expect(q.count == 40 && q.nextDue == 100)
        var sent: [(Int32, Int, String, [UInt8])] = []
        q.popDue(now: 99) { id, status, f, body in sent.append((id, status, f.value("apns-id") ?? "", body)) }
        #expect(sent.isEmpty)
        q.popDue(now: 109) { id, status, f, body in sent.append((id, status, f.value("apns-id") ?? "", body)) }
        #expect(sent.map(\.0) == (0..<10).map { Int32(2 * $0 + 1) })
        #expect(sent.map(\.2) == (0..<10).map { "id-\($0)" })
        #expect(sent[1].1 == 410 && sent[1].3 == [1] && sent[0].3 == [])
        #expect(q.nextDue == 110 && q.count == 30)
        // More arrive while some wait: the ring wraps and grows without reordering.
        for i in 40..<60 { q.push(due: 100 + UInt64(i), streamID: Int32(2 * i + 1), status: 200, fields: fields("id-\(i)"), body: []) }
        sent.removeAll()
        q.popDue(now: .max) { id, _, f, _ in sent.append((id, 0, f.value("apns-id") ?? "", [])) }
        #expect(sent.map(\.2) == (10..<60).map { "id-\($0)" })
        #expect(q.isEmpty && q.nextDue == nil)
    }

    /// A lowered latency does not overtake the answers decided before it.
    @Test func aLaterAnswerIsNeverDueBeforeAnEarlierOne() {
        var q = SimDelayQueue()
        q.push(due: 500, streamID: 1, status: 200, fields: fields("a"), body: [])
        q.push(due: 200, streamID: 3, status: 200, fields: fields("b"), body: [])
        var sent: [Int32] = []
        q.popDue(now: 300) { id, _, _, _ in sent.append(id) }
        #expect(sent.isEmpty)
        q.popDue(now: 500) { id, _, _, _ in sent.append(id) }
        #expect(sent == [1, 3])
    }

    /// The timer's slack: a tenth of the latency, capped at a millisecond; none without latency.
    @Test func theTimerWaitsATenthOfTheLatencyAtMostAMillisecond() {
        #expect(SimDelayQueue.slackNanos(latency: 0) == 0)
        #expect(SimDelayQueue.slackNanos(latency: 0.005) == 500_000)
        #expect(SimDelayQueue.slackNanos(latency: 0.04) == 1_000_000)
        #expect(SimDelayQueue.slackNanos(latency: 2) == 1_000_000)
    }
}
