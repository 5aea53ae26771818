import HeraldAPNS
import HeraldSender

/// One token request's final answer, as the scheduler counts it: its place in the run
/// (batch ordinal and slot), the result, and the request's `attempts` and `sentAtMillis`.
public struct TokenAnswer: Sendable {
    public let batch: Int
    public let slot: Int
    public let result: APNSResult
    public let attempts: Int
    public let sentAtMillis: Int64

    public init(batch: Int, slot: Int, result: APNSResult, attempts: Int, sentAtMillis: Int64) {
        self.batch = batch
        self.slot = slot
        self.result = result
        self.attempts = attempts
        self.sentAtMillis = sentAtMillis
    }
}

/// Token pushes by final result, counted while a group of answers is applied and added to
/// the metrics once (an atomic add per counter per group, not per push).
struct PushTally {
    var sent: UInt64 = 0
    var failed: UInt64 = 0
    var dead: UInt64 = 0
    var skipped: UInt64 = 0

    func add(to metrics: FanoutMetrics) {
        if sent > 0 { metrics.pushSent.inc(sent) }
        if failed > 0 { metrics.pushFailed.inc(failed) }
        if dead > 0 { metrics.pushDead.inc(dead) }
        if skipped > 0 { metrics.pushSkipped.inc(skipped) }
    }
}

extension FanoutScheduler {
    /// Answers of one run's token requests, in the order they came: applied one after the
    /// other until one of them needs actions (a stop, a prune, an orphaned run's release).
    /// Returns how many were taken and those actions; the engine executes them before
    /// handing over the rest, so the outcome is the same as `answered(_:_:attempts:sentAtMillis:)`
    /// called once per answer. The run is looked up once for the group and changed in place.
    public mutating func tokensAnswered(_ id: RunID, _ answers: ArraySlice<TokenAnswer>) -> (taken: Int, actions: [FanoutAction]) {
        var actions: [FanoutAction] = []
        let taken = answers.withUnsafeBufferPointer { tokensAnswered(id, $0, &actions) }
        return (taken, actions)
    }

    /// As above, into `actions`; returns how many of `answers` were taken (all of them once
    /// the run is gone: their answers count nowhere, as a single answer's would not).
    /// Through a buffer: its elements are read in place, where a collection's subscript
    /// copied each answer (its result's references retained and released).
    mutating func tokensAnswered(_ id: RunID, _ answers: UnsafeBufferPointer<TokenAnswer>, _ actions: inout [FanoutAction]) -> Int {
        var tally = PushTally()
        defer { tally.add(to: metrics) }
        // `runs.values[i]` changes the run where it is stored: `runs[id]?.apply(…)` went
        // through the dictionary's modify coroutine, which allocated a frame for the whole
        // `RunState?` and copied the run in and out, once per answer (callgrind of
        // `Benchmarks/faninstr.sh`: ~2,400 instructions per push).
        guard var i = runs.index(forKey: id) else { return answers.count }
        var taken = 0
        for k in answers.indices {
            taken += 1
            let applied = runs.values[i].apply(
                answers[k].result, batch: answers[k].batch, slot: answers[k].slot, attempts: answers[k].attempts,
                sentAtMillis: answers[k].sentAtMillis, &tally)
            guard let (stopReason, prune, orphaned) = applied, stopReason != nil || prune || orphaned else { continue }
            if let stopReason { stop(id, reason: stopReason, &actions) }
            if prune && !orphaned { flushPrunes(id, final: false, &actions) }
            if orphaned { actions += releaseIfDone(id) }
            // The rest waits for these actions; the run may be gone, or stored again (a new index).
            guard actions.isEmpty, let j = runs.index(forKey: id) else { return taken }
            i = j
        }
        return taken
    }
}
