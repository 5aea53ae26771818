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

    func queueCatchUp(channelID: String, token: [UInt8]) {
        do {
            guard let ch = try store.channel(id: channelID), ch.isOpen, ch.catchUp, ch.mode.usesTokens,
                let current = ch.currentEvent
            else { return }
            let run = try channelRun(num: ch.num)
            var template: APNSTemplate
            if let cached = run?.catchUpTemplate, cached.eventID == current {
                template = cached.template
            } else {
                guard let e = try store.event(id: current) else { return }
                template = APNSTemplate(
                    headers: HeaderList(APNSRequests.tokenPushFields(bundleID: ch.bundleID, priority: e.priority, expiration: e.expiration)),
                    body: HTTP2Body(e.payload), sink: self, generatesAPNSID: true)
                run?.catchUpTemplate = (current, template)
            }
            let req = APNSRequest(
                path: APNSRequests.tokenPath(Hex.encode(token)), template: template,
                context: CatchUp(channelNum: ch.num, token: token))
            if pendingCatchUps.count < 100_000 { pendingCatchUps.append((req, ch.environment)) }
        } catch {
            logger.warning("fanout.catchup_failed", ["channel": .string(channelID), "error": .string("\(error)")])
        }
    }

    func flushCatchUps() -> Bool {
        guard !pendingCatchUps.isEmpty else { return false }
        let waiting = pendingCatchUps
        pendingCatchUps.removeAll()
        var sent = 0
        for (r, env) in waiting {
            if transports.tokens(env).trySubmit([r]) { sent += 1 } else { pendingCatchUps.append((r, env)) }
        }
        metrics.catchUps.inc(UInt64(sent))
        return sent > 0
    }

    private func catchUpResult(_ c: CatchUp, _ result: APNSResult) {
        if case .outcome(.dropToken(_, let since), _) = result {
            _ = try? store.prune(channelNum: c.channelNum, [(.activity, c.token, since ?? clock.nowMillis())])
        }
    }
}
