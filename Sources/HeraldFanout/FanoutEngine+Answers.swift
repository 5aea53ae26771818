import HeraldSender

/// Token answers as the runs' sinks post them (`RunSink`, on the sender's loop), in the
/// order posted: each answer already as the scheduler takes it (`TokenAnswer`, its
/// request's `attempts` and `sentAtMillis` read when posted), the requests beside them
/// (for the engine's stock), and the runs as spans (a sink posts a loop turn's answers of
/// one run at once). The engine hands the scheduler slices of `answers` in place: carried
/// as one value per answer that was copied into a group and again into the scheduler's
/// loop, an answer's result was copied six times and destroyed seven (callgrind of
/// `Benchmarks/faninstr.sh`: ~2,500 instructions per push).
struct AnswerQueue {
    private(set) var answers: [TokenAnswer] = []
    private(set) var requests: [APNSRequest] = []
    /// Answers `[end of the span before, end)` are `run`'s.
    private(set) var spans: [(run: RunID, end: Int)] = []

    var count: Int { answers.count }
    var isEmpty: Bool { answers.isEmpty }

    /// `request`'s answer as the scheduler takes it: its place in the run is its index
    /// (batch × `batchSize` + slot). Only once the pool is done with the request (its sink).
    @inline(__always)
    static func answer(_ result: consuming APNSResult, of request: APNSRequest, batchSize: Int) -> TokenAnswer {
        TokenAnswer(
            batch: request.index / batchSize, slot: request.index % batchSize, result: result, attempts: request.attempts,
            sentAtMillis: request.sentAtMillis)
    }

    /// Adds an answer and its request (see `answer(_:of:batchSize:)`).
    @inline(__always)
    mutating func append(_ answer: consuming TokenAnswer, request: APNSRequest) {
        answers.append(answer)
        requests.append(request)
    }

    /// Ends the answers appended since the last span as `run`'s (joined to the last span
    /// when it is the same run's).
    mutating func closeSpan(_ run: RunID) {
        guard (spans.last?.end ?? 0) < answers.count else { return }
        if spans.last?.run == run {
            spans[spans.count - 1].end = answers.count
        } else {
            spans.append((run, answers.count))
        }
    }

    /// Empties the queue, keeping its storage.
    mutating func removeAll() {
        answers.removeAll(keepingCapacity: true)
        requests.removeAll(keepingCapacity: true)
        spans.removeAll(keepingCapacity: true)
    }
}

extension FanoutEngine {
    /// Returns the requests of the answers taken this turn to the stock: their `attempts`
    /// and `sentAtMillis` are in the answers, and the pool is done with them (it called
    /// the sink; the inbox's lock ordered that).
    func stockAnsweredRequests() {
        takenAnswers.requests.withUnsafeBufferPointer { p in
            for r in p { requestStock.put(r) }
        }
    }

    /// Hands the scheduler the answers taken this turn from `used` up to `end`, one run's
    /// span at a time (`span`: the span `used` is in), executing the actions an answer
    /// needs before the answers after it are applied (as if each had come alone).
    func handAnswers(upTo end: Int, _ used: inout Int, _ span: inout Int) {
        let end = min(end, takenAnswers.count)
        while used < end {
            let s = takenAnswers.spans[span]
            let stop = min(end, s.end)
            var next = used
            while next < stop {
                let (taken, actions) = scheduler.tokensAnswered(s.run, takenAnswers.answers[next..<stop])
                next += max(1, taken)
                execute(actions)
            }
            used = stop
            if stop == s.end { span += 1 }
        }
    }
}
