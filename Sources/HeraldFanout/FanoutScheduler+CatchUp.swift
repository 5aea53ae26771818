import HeraldAPNS
import HeraldCore
import HeraldSender
import HeraldStore

/// One flush of waiting late joiners, spread over the actions it needs (reading a
/// channel's current state, submitting a chunk).
struct CatchUpFlush {
    /// One decision per channel per flush (nil inside: nothing to send on that channel).
    var decided: [Int64: CatchUpSource?] = [:]
    var sent = 0
    /// The chunk handed to the sender, waiting for `catchUpSubmitted`.
    var submitted: [(channel: Int64, token: [UInt8])] = []
    var submittedIDs: [Int] = []
}

extension FanoutScheduler {
    /// Live Activities registered on `channel` (as storage saw it when they registered):
    /// each is owed the current state (late joiner, design delivery 9) if the channel has
    /// catch-up on and sends tokens. Past `config.maxPendingCatchUps` waiting, the rest are
    /// dropped and counted (`herald_catchup_dropped_total`): the next event reaches them.
    public mutating func registered(_ channel: Channel, tokens: [[UInt8]]) {
        guard channel.isOpen, channel.catchUp, channel.mode.usesTokens, var ch = channels[channel.num] else { return }
        ch.channel = channel
        channels[channel.num] = ch
        // Tokens of shards another worker holds are its to catch up.
        let tokens = ch.lease.shards.isAll ? tokens : tokens.filter { ch.lease.shards.holds(token: $0) }
        let room = max(0, config.maxPendingCatchUps - pendingCatchUps.count)
        for token in tokens.prefix(room) { pendingCatchUps.append((channel.num, token)) }
        if tokens.count > room {
            let dropped = tokens.count - room
            metrics.catchUpsDropped.inc(UInt64(dropped))
            logger.warning(
                "fanout.catchup_dropped",
                ["channel": .string(channel.id), "dropped": .int(Int64(dropped)), "waiting": .int(Int64(pendingCatchUps.count))])
        }
    }

    /// Starts this round's flush: catch-ups go to the sender in the express lane, oldest
    /// first, up to `catchUpChunk` of one channel per submission, stopping at the first the
    /// sender has no room for (the rest wait, in order, for the next round) and after
    /// `catchUpChunk` in all. Until they are answered, the channel's next event does not
    /// start (`stepChannel`): per token, never an older event after a newer one.
    mutating func startFlush() -> [FanoutAction] {
        guard !pendingCatchUps.isEmpty else { return [] }
        flush = CatchUpFlush()
        return continueFlush()
    }

    mutating func continueFlush() -> [FanoutAction] {
        guard var f = flush else { return [] }
        while let (num, _) = pendingCatchUps.first {
            var lapsed: [FanoutAction] = []
            guard leaseHolds(num, &lapsed), let ch = channels[num] else {  // closed or given up since
                if !lapsed.isEmpty {
                    flush = f
                    return lapsed + continueFlush()
                }
                _ = pendingCatchUps.popFirst()
                continue
            }
            guard let decided = f.decided[num] else {
                // The channel's current event, as storage has it now.
                flush = f
                var known = Set<String>()
                if let e = ch.catchUpEvent { known.insert(e.id) }
                if let a = ch.active, let run = runs[a] { known.insert(run.record.id) }
                return [.lookUpCurrent(channelNum: num, known: known)]
            }
            guard let source = decided else {  // an event on its way reaches them
                _ = pendingCatchUps.popFirst()
                continue
            }
            // This channel's next few waiting tokens, as one submission.
            var items: [CatchUpItem] = []
            f.submitted.removeAll()
            f.submittedIDs.removeAll()
            while items.count < Self.catchUpChunk, let next = pendingCatchUps.first, next.channel == num {
                _ = pendingCatchUps.popFirst()
                nextCatchUp += 1
                items.append(CatchUpItem(id: nextCatchUp, token: next.token))
                f.submitted.append(next)
                f.submittedIDs.append(nextCatchUp)
            }
            flush = f
            return [
                .catchUp(
                    CatchUpSubmit(
                        channelNum: num, environment: ch.channel.environment, bundleID: ch.channel.bundleID, source: source,
                        items: items, deadline: ch.leaseDeadline))
            ]
        }
        flush = nil
        if f.sent > 0 { metrics.catchUps.inc(UInt64(f.sent)) }
        return []
    }

    /// The channel's current event id in storage, and its record when it was not among the
    /// known ones.
    public mutating func currentStateRead(channelNum: Int64, eventID: String?, record: EventRecord?) -> [FanoutAction] {
        guard flush != nil else { return [] }
        let source = catchUpSource(channelNum, currentID: eventID, record: record)
        flush?.decided[channelNum] = .some(source)
        return continueFlush()
    }

    /// The sender took the chunk (`accepted`), or had no room: it waits, in order, for the
    /// next round, and this flush ends.
    public mutating func catchUpSubmitted(accepted: Bool) -> [FanoutAction] {
        guard var f = flush, let num = f.submitted.first?.channel else { return [] }
        if !accepted {
            for t in f.submitted.reversed() { pendingCatchUps.prepend(t) }  // decided again next round
            flush = nil
            if f.sent > 0 { metrics.catchUps.inc(UInt64(f.sent)) }
            return []
        }
        for (id, t) in zip(f.submittedIDs, f.submitted) { catchUpTokens[id] = t }
        channels[num]?.catchUpsInFlight += f.submitted.count
        f.sent += f.submitted.count
        f.submitted.removeAll()
        f.submittedIDs.removeAll()
        progressed = true
        flush = f
        if f.sent >= Self.catchUpChunk {  // the rest next round: channels take turns
            flush = nil
            metrics.catchUps.inc(UInt64(f.sent))
            return []
        }
        return continueFlush()
    }

    /// What a late joiner of the channel is sent now: its current state (its newest
    /// `update` or `end` since the last `start`), unless an event whose pass will reach the
    /// new token anyway is on its way (nil: nothing to send). While an event waits to start,
    /// no catch-up is sent: the waiting event reaches the token, and a stream of late
    /// joiners cannot hold it back.
    mutating func catchUpSource(_ num: Int64, currentID: String?, record: EventRecord?) -> CatchUpSource? {
        guard var ch = channels[num] else { return nil }
        let active = ch.active.flatMap { runs[$0] }
        if let a = active, !a.started, a.record.kind != .start { return nil }
        guard let id = currentID else { return nil }
        // Running now: its own requests go to the tokens its pass has not reached yet,
        // which need not include one registered behind its cursor.
        if let a = active, a.record.id == id {
            guard !a.stopped, a.usesTokens else { return nil }
            return .run(a.id)
        }
        if let cached = ch.catchUpEvent, cached.id == id { return .event(cached) }
        guard let e = record, e.id == id else { return nil }
        // Not taken yet, or waiting: its whole pass is still to come and includes the
        // new token. Superseded or failed: nothing worth sending.
        if e.seq > ch.acceptedSeq || ch.pending.contains(where: { $0.id == id }) { return nil }
        if ch.draining.contains(where: { runs[$0]?.record.id == id }) || e.state == .failed || e.state == .superseded { return nil }
        ch.catchUpEvent = e
        channels[num] = ch
        return .event(e)
    }

    mutating func catchUpAnswered(_ id: Int, _ result: APNSResult, _ actions: inout [FanoutAction]) {
        guard let (num, token) = catchUpTokens.removeValue(forKey: id) else { return }
        guard channels[num] != nil else { return }
        channels[num]?.catchUpsInFlight -= 1
        if case .outcome(.dropToken(_, let since), _) = result {
            actions.append(
                .prune(
                    PruneRequest(
                        run: nil, channelNum: num, items: [(.activity, token, since ?? clock.nowMillis())],
                        reason: since == nil ? .badDeviceToken : .unregistered)))
        }
    }
}
