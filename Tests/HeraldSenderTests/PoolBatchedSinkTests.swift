import Foundation
import HeraldTestSupport
import Synchronization
import Testing

@testable import HeraldAPNS
@testable import HeraldNet
@testable import HeraldSender

/// `APNSResultSink`'s batched delivery: the pool hands a loop turn's results to a sink in
/// one call per run of results for that sink, never the per-request call as well; a sink
/// without the batched call still hears every result one by one (the default).
@Suite struct PoolBatchedSinkTests {
    final class BatchSink: APNSResultSink, @unchecked Sendable {
        let lock = NSCondition()
        var calls = 0
        var single = 0
        var results: [Int: APNSResult] = [:]
        var largest = 0

        func apnsCompleted(_ request: APNSRequest, result: APNSResult) {
            lock.lock()
            single += 1
            lock.unlock()
        }

        func apnsCompleted(_ batch: ArraySlice<APNSCompletion>) {
            lock.lock()
            calls += 1
            largest = max(largest, batch.count)
            for c in batch { results[c.request.index] = c.result }
            lock.broadcast()
            lock.unlock()
        }

        func wait(for n: Int, timeout: Double = 60) -> Bool {
            let deadline = Date(timeIntervalSinceNow: timeout)
            lock.lock()
            defer { lock.unlock() }
            while results.count < n { if !lock.wait(until: deadline) { return results.count >= n } }
            return true
        }
    }

    @Test func aTurnsResultsReachTheSinkInBatchesAndEachExactlyOnce() throws {
        let fx = try SimFixture()
        let (pool, _) = try fx.pool(connections: 2)
        defer { pool.shutdown() }
        let sink = BatchSink()
        let template = tokenTemplate(sink, body: updatePayload(1_767_225_600))
        let reqs = requests(makeTokens(3000), template)
        for (i, r) in reqs.enumerated() { r.index = i }
        pool.submit(reqs)
        #expect(sink.wait(for: 3000))
        #expect(pool.waitIdle(timeout: 10))
        sink.lock.lock()
        defer { sink.lock.unlock() }
        #expect(sink.results.count == 3000)
        #expect(sink.single == 0, "the per-request call is not made when the sink takes batches")
        #expect(sink.results.values.allSatisfy { if case .outcome(.delivered, _) = $0 { true } else { false } })
        // 3000 answers over two connections: reads bring many at once.
        #expect(sink.calls < 3000 && sink.largest > 1, "\(sink.calls) calls, largest \(sink.largest)")
    }

    @Test func aSinkWithoutTheBatchedCallHearsEveryResultOneByOne() throws {
        let fx = try SimFixture()
        let (pool, _) = try fx.pool(connections: 1)
        defer { pool.shutdown() }
        let sink = ResultCollector()
        pool.submit(requests(makeTokens(500), tokenTemplate(sink, body: updatePayload(1))))
        #expect(sink.wait(for: 500))
        #expect(sink.outcomes().count == 500)
    }

    @Test func cancelledRequestsReachTheirSinkBeforeShutdownReturns() throws {
        let fx = try SimFixture { $0.faults.latency = 0.5 }
        let (pool, _) = try fx.pool(connections: 1) { $0.maxStreamsPerConnection = 1 }
        let sink = BatchSink()
        let template = tokenTemplate(sink, body: updatePayload(2))
        let reqs = requests(makeTokens(50), template)
        for (i, r) in reqs.enumerated() { r.index = i }
        pool.submit(reqs)
        pool.shutdown()
        sink.lock.lock()
        let queued = sink.results.values.filter { if case .cancelled = $0 { true } else { false } }.count
        sink.lock.unlock()
        #expect(queued >= 40, "requests still queued at shutdown are reported cancelled before it returns (\(queued))")
    }
}
