import HeraldSender

/// A token request's answer as its run's sink posts it: the run, the request's place in it
/// (batch ordinal and slot), the result, and the request (reused by the engine's stock).
struct PostedAnswer {
    let run: RunID
    let batch: Int
    let slot: Int
    let result: APNSResult
    let request: APNSRequest
}

extension FanoutEngine {
    /// Adds one token answer to the group of its run (handing over the group of another run
    /// first). The request goes back to the stock once its `attempts` and `sentAtMillis`
    /// are read: the pool is done with it (it called the sink; the inbox's lock ordered that).
    func groupAnswer(_ a: consuming PostedAnswer) {
        if answersRun != a.run {
            handAnswers()
            answersRun = a.run
        }
        let r = a.request
        answers.append(TokenAnswer(batch: a.batch, slot: a.slot, result: a.result, attempts: r.attempts, sentAtMillis: r.sentAtMillis))
        requestStock.put(r)
    }

    /// Groups the answers taken this turn (`takenAnswers`, reversed) until `used` reaches `end`.
    func groupAnswers(upTo end: Int, _ used: inout Int) {
        while used < end, let a = takenAnswers.popLast() {
            used += 1
            groupAnswer(a)
        }
    }

    /// Hands the group of answers to the scheduler, executing the actions an answer needs
    /// before the answers after it are applied (as if each had come alone).
    func handAnswers() {
        guard let run = answersRun else { return }
        var next = 0
        while next < answers.count {
            let (taken, actions) = scheduler.tokensAnswered(run, answers[next...])
            next += max(1, taken)
            execute(actions)
        }
        answers.removeAll(keepingCapacity: true)
        answersRun = nil
    }
}
