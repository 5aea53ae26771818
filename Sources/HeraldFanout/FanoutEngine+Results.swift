import Foundation
import HeraldAPNS
import HeraldCore
import HeraldNet
import HeraldSender
import HeraldStore

extension FanoutEngine {
    /// Applies one final answer from the sender.
    func completed(_ r: APNSRequest, _ result: APNSResult) {
        if let b = r.context as? Batch {
            tokenResult(b, r, result)
        } else if let run = r.context as? EventRun {
            broadcastResult(run, result)
        } else if let c = r.context as? CatchUp {
            catchUpResult(c, result)
        }
    }

    private func channel(of run: EventRun) -> ChannelRun? { channels[run.record.channelNum] }

    private func tokenResult(_ b: Batch, _ r: APNSRequest, _ result: APNSResult) {
        let run = b.run
        run.outstanding -= 1
        b.remaining -= 1
        run.counters.retried += Int64(max(0, r.attempts - 1))
        switch result {
        case .outcome(.delivered, _):
            run.counters.sent += 1
            run.answers += 1
            metrics.pushSent.inc()
        case .outcome(.dropToken(_, let since), _):
            run.answers += 1
            metrics.pushDead.inc()
            let token = b.tokens[r.index]
            if let since {
                run.unregistered.append((run.kind, token, since))
            } else {
                // BadDeviceToken has no timestamp: a registration after the request wins.
                run.deadAnswers += 1
                run.heldInvalid.append((run.kind, token, r.sentAtMillis))
            }
            if let ch = channel(of: run) { flushPrunes(run, ch, final: false) }
        case .outcome(.failEvent(let reason, let status), _):
            run.counters.failed += 1
            metrics.pushFailed.inc()
            run.answers += 1
            stop(run, reason: "APNs refused the push: \(reason) (\(status))")
        case .outcome(.failConfig(let reason, let status), _):
            run.counters.failed += 1
            metrics.pushFailed.inc()
            run.answers += 1
            stop(run, reason: "APNs refused the configuration: \(reason) (\(status)); check the key, team, bundle id and environment")
        case .outcome, .exhausted:
            run.counters.failed += 1
            run.answers += 1
            metrics.pushFailed.inc()
        case .cancelled:
            metrics.pushSkipped.inc()
        }
        run.advanceCheckpoint()
    }

    /// Fails the event (a bad request or configuration): nothing more is sent.
    private func stop(_ run: EventRun, reason: String) {
        guard !run.stopped else { return }
        run.stopped = true
        run.stopState = .failed
        run.stopReason = reason
        run.template?.cancel()
        logger.error("fanout.event_failed", ["event_id": .string(run.record.id), "reason": .string(reason)])
    }

    /// Deletes the subscriptions APNs reported dead. 410 answers carry APNs' timestamp and
    /// are pruned in batches (a registration after that time survives, reference §8.10).
    /// BadDeviceToken answers are held until the pruning guard has seen enough answers: if
    /// an implausible share of the event's answers call tokens invalid (a wrong environment
    /// or topic does that to every token, design delivery 10), nothing is deleted and it
    /// is raised in logs and metrics.
    func flushPrunes(_ run: EventRun, _ ch: ChannelRun, final: Bool) {
        if run.unregistered.count >= 256 || (final && !run.unregistered.isEmpty) {
            applyPrunes(run, ch, run.unregistered)
            run.unregistered.removeAll()
        }
        guard !run.heldInvalid.isEmpty else { return }
        let sampleReady = run.answers >= config.pruneGuardMinSample || final
        guard sampleReady else { return }
        if !run.guardTripped && Double(run.deadAnswers) >= config.pruneGuardRatio * Double(run.answers) {
            run.guardTripped = true
            metrics.guardTrips.inc()
            logger.error(
                "fanout.prune_guard_tripped",
                ["event_id": .string(run.record.id), "channel": .string(ch.channel.id), "bundle_id": .string(ch.channel.bundleID),
                 "environment": .string(ch.channel.environment.rawValue), "invalid": .int(Int64(run.deadAnswers)),
                 "answers": .int(Int64(run.answers)),
                 "hint": "most tokens were refused as invalid: check the channel's environment and bundle id; subscriptions kept"])
        }
        if run.guardTripped {
            run.counters.failed += Int64(run.heldInvalid.count)
            run.heldInvalid.removeAll()
        } else if run.heldInvalid.count >= 256 || final {
            applyPrunes(run, ch, run.heldInvalid)
            run.heldInvalid.removeAll()
        }
    }

    private func applyPrunes(_ run: EventRun, _ ch: ChannelRun, _ items: [(kind: SubscriptionKind, token: [UInt8], beforeMillis: Int64)]) {
        do {
            let n = try store.prune(channelNum: ch.channel.num, items)
            // Those not deleted were registered again after APNs' answer: kept, not reached.
            run.counters.pruned += Int64(n)
            run.counters.failed += Int64(items.count - n)
            metrics.pruned.inc(UInt64(n))
        } catch {
            run.counters.failed += Int64(items.count)
            logger.warning("fanout.prune_failed", ["event_id": .string(run.record.id), "error": .string("\(error)")])
        }
    }

    private func broadcastResult(_ run: EventRun, _ result: APNSResult) {
        run.broadcastPending = false
        let state: String
        var reason: String?
        switch result {
        case .outcome(.delivered(let id, let unique), _):
            state = "sent"
            metrics.broadcasts.inc()
            logger.info("fanout.broadcast_sent", ["event_id": .string(run.record.id), "apns_request_id": id.map { .string($0) } ?? .null, "apns_unique_id": unique.map { .string($0) } ?? .null])
        case .cancelled:
            state = "skipped"
        case .outcome(.channelGone, _):
            state = "failed"
            reason = "ChannelNotRegistered: the APNs channel no longer exists"
        case .outcome(let o, let resp):
            state = "failed"
            reason = resp.flatMap { try? JSON.parse($0.body) }?["reason"]?.stringValue ?? o.label
        case .exhausted(let o):
            state = "failed"
            reason = "retries exhausted (\(o.label))"
        }
        if state == "failed" {
            metrics.broadcastFailures.inc()
            logger.error("fanout.broadcast_failed", ["event_id": .string(run.record.id), "reason": .string(reason ?? "")])
        }
        run.record.broadcastState = state
        do {
            try store.setBroadcastState(eventID: run.record.id, state: state, reason: reason)
        } catch {
            logger.warning("fanout.broadcast_state_failed", ["event_id": .string(run.record.id), "error": .string("\(error)")])
        }
        if state == "failed" && !run.usesTokens && run.stopState == nil {
            run.stopState = .failed
            run.stopReason = "broadcast failed: \(reason ?? "")"
        }
    }

    // MARK: - late joiners

    /// Notes late joiners; `flushCatchUps` decides what they get when they can be sent.
    /// Past `config.maxPendingCatchUps` waiting, the rest are dropped and counted
    /// (`herald_catchup_dropped_total`): they get the channel's next event, not the current
    /// state.
    func queueCatchUps(channelID: String, tokens: [[UInt8]]) {
        do {
            guard let ch = try store.channel(id: channelID), ch.isOpen, ch.catchUp, ch.mode.usesTokens,
                let run = try channelRun(num: ch.num)
            else { return }
            run.channel = ch
            let room = max(0, config.maxPendingCatchUps - pendingCatchUps.count)
            for token in tokens.prefix(room) { pendingCatchUps.append((run, token)) }
            if tokens.count > room {
                let dropped = tokens.count - room
                metrics.catchUpsDropped.inc(UInt64(dropped))
                logger.warning(
                    "fanout.catchup_dropped",
                    ["channel": .string(channelID), "dropped": .int(Int64(dropped)), "waiting": .int(Int64(pendingCatchUps.count))])
            }
        } catch {
            logger.warning("fanout.catchup_failed", ["channel": .string(channelID), "error": .string("\(error)")])
        }
    }

    /// Hands waiting catch-ups to the sender in the express lane, oldest first, up to
    /// `catchUpChunk` of one channel per `trySubmit`, and stops at the first the sender has
    /// no room for (the rest wait, in order, for the next round). Until they are answered,
    /// the channel's next event does not start (`stepChannel`): per token, never an older
    /// event after a newer one.
    func flushCatchUps() -> Bool {
        var decided: [Int64: APNSTemplate?] = [:]  // one decision per channel per flush
        var sent = 0
        var chunk: [APNSRequest] = []
        while let (ch, _) = pendingCatchUps.first {
            guard channels[ch.channel.num] === ch else {  // closed since
                pendingCatchUps.popFirst()
                continue
            }
            let num = ch.channel.num
            if decided[num] == nil { decided[num] = catchUpTemplate(ch) }
            guard let template = decided[num] ?? nil else {  // an event on its way reaches them
                pendingCatchUps.popFirst()
                continue
            }
            // This channel's next few waiting tokens, as one submission.
            chunk.removeAll(keepingCapacity: true)
            var taken: [(ChannelRun, [UInt8])] = []
            while chunk.count < Self.catchUpChunk, let (next, token) = pendingCatchUps.first, next === ch {
                pendingCatchUps.popFirst()
                taken.append((next, token))
                let r = APNSRequest(
                    path: APNSRequests.tokenPath(Hex.encode(token)), template: template, context: CatchUp(channel: ch, token: token))
                r.express = true
                chunk.append(r)
            }
            guard transports.tokens(ch.channel.environment).trySubmit(chunk) else {
                for t in taken.reversed() { pendingCatchUps.prepend(t) }  // decided again next round
                break
            }
            ch.catchUpsInFlight += chunk.count
            sent += chunk.count
            if sent >= Self.catchUpChunk { break }  // the rest next step: channels take turns
        }
        metrics.catchUps.inc(UInt64(sent))
        return sent > 0
    }

    /// What a late joiner of `ch` is sent now: the channel's current state (its newest
    /// `update` or `end` since the last `start`), unless an event whose pass will reach the
    /// new token anyway is on its way (nil: nothing to send). While an event waits to start,
    /// no catch-up is sent: the waiting event reaches the token, and a stream of late
    /// joiners cannot hold it back.
    private func catchUpTemplate(_ ch: ChannelRun) -> APNSTemplate? {
        do {
            if let a = ch.active, !a.started, a.record.kind != .start { return nil }
            guard let id = try store.channel(num: ch.channel.num)?.currentEvent else { return nil }
            // Running now: its own requests go to the tokens its pass has not reached yet,
            // which need not include one registered behind its cursor.
            if let a = ch.active, a.record.id == id {
                guard !a.stopped, let t = a.template else { return nil }
                return t
            }
            if let cached = ch.catchUpTemplate, cached.eventID == id { return cached.template }
            guard let e = try store.event(id: id) else { return nil }
            // Not taken yet, or waiting: its whole pass is still to come and includes the
            // new token. Superseded or failed: nothing worth sending.
            if e.seq > ch.acceptedSeq || ch.pending.contains(where: { $0.id == id }) { return nil }
            if ch.draining.contains(where: { $0.record.id == id }) || e.state == .failed || e.state == .superseded { return nil }
            let template = APNSTemplate(
                headers: HeaderList(APNSRequests.tokenPushFields(bundleID: ch.channel.bundleID, priority: e.priority, expiration: e.expiration)),
                body: HTTP2Body(e.payload), sink: self, generatesAPNSID: true)
            ch.catchUpTemplate = (id, template)
            return template
        } catch {
            logger.warning("fanout.catchup_failed", ["channel": .string(ch.channel.id), "error": .string("\(error)")])
            return nil
        }
    }

    private func catchUpResult(_ c: CatchUp, _ result: APNSResult) {
        c.channel.catchUpsInFlight -= 1
        if case .outcome(.dropToken(_, let since), _) = result {
            _ = try? store.prune(channelNum: c.channel.channel.num, [(.activity, c.token, since ?? clock.nowMillis())])
        }
    }
}
