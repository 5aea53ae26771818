import Foundation
import HeraldCore
import HeraldFanout
import HeraldStore

/// The dispatcher thread: writes reports to the outbox table, and, while it holds the
/// dispatch right (always on SQLite; one worker at a time on PostgreSQL), drives a
/// `WebhookOutbox` over the table's rows and hands its posts to `maxInFlight` poster
/// threads.
extension WebhookHub {
    /// Starts the dispatcher and the poster threads. Once.
    public func start() {
        let n = max(1, config.maxInFlight)
        running = n + 1
        let t = Thread { [self] in
            ThreadName.set("herald-webhooks")
            dispatch()
            done.signal()
        }
        threads.append(t)
        for i in 0..<n {
            threads.append(
                Thread { [self] in
                    ThreadName.set("herald-whpost-\(i)")
                    post()
                    done.signal()
                })
        }
        for t in threads { t.start() }
    }

    /// Writes the reports still waiting to the outbox, stops the threads (posts in flight
    /// finish within the poster's timeout) and gives the dispatch right back.
    public func stop() {
        cond.lock()
        stopping = true
        cond.broadcast()
        cond.unlock()
        jobCond.lock()
        jobCond.broadcast()
        jobCond.unlock()
        for _ in 0..<running { done.wait() }
        running = 0
        threads.removeAll()
    }

    /// The dispatcher's state (its thread only).
    struct DispatchState {
        var outbox: WebhookOutbox
        var holding = false
        var lastSeen: Int64 = 0
        var nextClaim = 0.0
        var nextRefresh = 0.0
        var webhooks: [String: Webhook] = [:]
        var secrets: [String: [UInt8]] = [:]
        var channelIDs: [Int64: String] = [:]
        var random = SystemRandomNumberGenerator()
    }

    func freshOutbox() -> WebhookOutbox {
        WebhookOutbox(capacity: config.outboxCapacity, maxInFlight: max(1, config.maxInFlight), schedule: config.schedule)
    }

    func dispatch() {
        var s = DispatchState(outbox: freshOutbox())
        while true {
            cond.lock()
            let quit = stopping
            let reports = pending
            pending.removeAll()
            pendingWeight = 0
            let answered = answers
            answers.removeAll()
            cond.unlock()
            let now = clock.now()
            // Before writing reports: a webhook created a moment ago gets them.
            if now >= s.nextRefresh || quit || !reports.isEmpty { refresh(&s, now: now) }
            if !reports.isEmpty { write(reports, &s, now: now) }
            if quit {
                if s.holding { try? store.releaseWebhookDispatch(holder: holder) }
                return
            }
            claim(&s, now: now)
            var actions: [WebhookOutbox.Action] = []
            for a in answered { actions += answer(a, &s, now: now) }
            if s.holding {
                convertReports(&s, now: now)
                adoptNewRows(&s)
                actions += s.outbox.tick(now: now)
            }
            execute(actions, &s)
            var wait = config.pollInterval
            if s.holding, let due = s.outbox.nextDue() { wait = min(wait, max(0.001, due - clock.now())) }
            cond.lock()
            if pending.isEmpty && answers.isEmpty && !stopping { _ = cond.wait(until: Date(timeIntervalSinceNow: wait)) }
            cond.unlock()
        }
    }

    /// The webhook list (created and deleted on any worker), their secrets, the gauges.
    func refresh(_ s: inout DispatchState, now: Double) {
        s.nextRefresh = now + max(config.pollInterval, 0.5)
        do {
            let list = try store.webhooks()
            var byID: [String: Webhook] = [:]
            for w in list {
                byID[w.id] = w
                if s.secrets[w.id] == nil {
                    do {
                        s.secrets[w.id] = try secret(of: w)
                    } catch {
                        logger.error(
                            "webhooks.secret_unreadable",
                            ["webhook_id": .string(w.id), "hint": "the webhook key file is not the one this secret was sealed with"])
                    }
                }
            }
            for gone in s.webhooks.keys where byID[gone] == nil {
                s.secrets[gone] = nil
                execute(s.outbox.removeWebhook(gone), &s)
            }
            s.webhooks = byID
            let stats = try store.webhookOutboxStats()
            metrics.depth.set(Double(stats.count))
            metrics.oldestAge.set(stats.oldestCreatedAtMillis.map { max(0, now - Double($0) / 1000) } ?? 0)
            metrics.reports.set(Double(try store.webhookReportCount()))
        } catch {
            logger.warning("webhooks.refresh_failed", ["error": .string("\(error)")])
        }
    }

    /// Takes or renews the dispatch right; a change starts the outbox over from the table.
    func claim(_ s: inout DispatchState, now: Double) {
        guard now >= s.nextClaim else { return }
        let got = (try? store.claimWebhookDispatch(holder: holder, millis: config.dispatchLeaseMillis)) ?? false
        s.nextClaim = now + Double(config.dispatchLeaseMillis) / 3000
        if got != s.holding {
            s.holding = got
            s.outbox = freshOutbox()
            s.lastSeen = 0
            logger.info("webhooks.dispatch", ["holding": .bool(got)])
        }
    }

    /// Rows other writers (this process's `write`, other workers) added since the last look.
    func adoptNewRows(_ s: inout DispatchState) {
        while true {
            guard let rows = try? store.webhookDeliveries(afterID: s.lastSeen, limit: 1_000) else { return }
            for r in rows {
                s.lastSeen = max(s.lastSeen, r.id)
                guard let event = WebhookEvent(type: r.type, storedPayload: r.payload) else {
                    logger.warning("webhooks.unreadable_delivery", ["delivery": .int(r.id)])
                    continue
                }
                s.outbox.adopt(
                    WebhookDelivery(
                        id: UInt64(r.id), webhookID: r.webhookID, event: event, createdAt: Double(r.createdAtMillis) / 1000,
                        attempts: r.attempts, notBefore: Double(r.notBeforeMillis) / 1000))
            }
            if rows.count < 1_000 { return }
        }
    }

    /// Turns reports into outbox rows for the webhooks that want them (pruned tokens in
    /// deliveries of at most 1,000) and appends them in one transaction. A failed write
    /// keeps them for the next turn.
    func write(_ reports: [Pending], _ s: inout DispatchState, now: Double) {
        var rows: [NewWebhookDelivery] = []
        let ms = Int64(now * 1000)
        for r in reports {
            for event in resolve(r, &s) {
                for w in s.webhooks.values.sorted(by: { $0.id < $1.id }) where w.wants(type: event.kind.rawValue, channel: event.channel) {
                    rows.append(
                        NewWebhookDelivery(webhookID: w.id, type: event.kind.rawValue, payload: event.storedPayload, createdAtMillis: ms))
                }
            }
        }
        guard !rows.isEmpty else { return }
        let depth = (try? store.webhookOutboxStats().count) ?? 0
        let room = max(0, config.outboxCapacity - depth)
        if rows.count > room {
            for r in rows[room...] { metrics.deliveries(r.type, "dropped").inc() }
            metrics.dropped("outbox_full").inc(UInt64(rows.count - room))
            rows.removeLast(rows.count - room)
        }
        do {
            _ = try store.appendWebhookDeliveries(rows)
        } catch {
            logger.warning("webhooks.outbox_write_failed", ["error": .string("\(error)"), "deliveries": .int(Int64(rows.count))])
            cond.lock()
            pending.insert(contentsOf: reports, at: 0)
            pendingWeight += reports.reduce(0) { $0 + $1.weight }
            cond.unlock()
        }
    }

    /// Turns the reports the storage recorded into deliveries (the holder of the dispatch
    /// right only, so one converter writes the outbox's order).
    func convertReports(_ s: inout DispatchState, now: Double) {
        guard let waiting = try? store.webhookReportCount(), waiting > 0 else { return }
        // The list as of now: a webhook created a moment before the fact gets it.
        refresh(&s, now: now)
        let hooks = s.webhooks.values.sorted { $0.id < $1.id }
        let capacity = config.outboxCapacity
        while true {
            let depth = (try? store.webhookOutboxStats().count) ?? 0
            do {
                let n = try store.convertWebhookReports(limit: 500) { [self] reports in
                    deliveries(for: reports, webhooks: hooks, room: max(0, capacity - depth), nowMillis: Int64(now * 1000))
                }
                if n < 500 { return }
            } catch {
                logger.warning("webhooks.report_conversion_failed", ["error": .string("\(error)")])
                return
            }
        }
    }

    /// The deliveries `reports` make for `webhooks`: adjacent pruned reports of one channel
    /// and reason merged, then split in deliveries of at most 1,000 tokens; an
    /// `event.finished` only for an event final over all its shards, once per batch.
    /// Past `room`, deliveries are dropped and counted. Called inside the conversion's
    /// transaction (on SQLite's writer thread): reads only through other connections.
    func deliveries(for reports: [WebhookReport], webhooks: [Webhook], room: Int, nowMillis: Int64) -> [NewWebhookDelivery] {
        var events: [WebhookEvent] = []
        var finished = Set<String>()
        var pruned: (channel: String, reason: String, tokens: [String])?
        func flushPruned() {
            guard let p = pruned else { return }
            for i in stride(from: 0, to: p.tokens.count, by: WebhookEvent.maxTokensPerDelivery) {
                let chunk = Array(p.tokens[i..<min(p.tokens.count, i + WebhookEvent.maxTokensPerDelivery)])
                events.append(.subscriptionPruned(channel: p.channel, tokens: chunk, reason: p.reason))
            }
            pruned = nil
        }
        for r in reports {
            if r.type == WebhookEvent.Kind.subscriptionPruned.rawValue, let j = try? JSON.parse(Array(r.payload.utf8)) {
                let tokens = j["tokens"]?.arrayValue?.compactMap(\.stringValue) ?? []
                let reason = j["reason"]?.stringValue ?? "unregistered"
                if let p = pruned, p.channel == r.channel, p.reason == reason {
                    pruned?.tokens += tokens
                } else {
                    flushPruned()
                    pruned = (r.channel, reason, tokens)
                }
                continue
            }
            flushPruned()
            if r.type == WebhookEvent.Kind.eventFinished.rawValue {
                guard let id = (try? JSON.parse(Array(r.payload.utf8)))?["event_id"]?.stringValue, finished.insert(id).inserted,
                    let e = try? store.event(id: id), e.state.isFinished
                else { continue }
                let c = e.counters
                events.append(
                    .eventFinished(
                        channel: e.channelID, eventID: e.id, seq: e.seq, state: e.state.rawValue, targets: c.targets, sent: c.sent,
                        failed: c.failed, pruned: c.pruned))
            } else if let e = WebhookEvent(type: r.type, storedPayload: r.payload) {
                events.append(e)
            }
        }
        flushPruned()
        var rows: [NewWebhookDelivery] = []
        for event in events {
            for w in webhooks where w.wants(type: event.kind.rawValue, channel: event.channel) {
                guard rows.count < room else {
                    metrics.deliveries(event.kind.rawValue, "dropped").inc()
                    metrics.dropped("outbox_full").inc()
                    continue
                }
                rows.append(
                    NewWebhookDelivery(webhookID: w.id, type: event.kind.rawValue, payload: event.storedPayload, createdAtMillis: nowMillis)
                )
            }
        }
        return rows
    }

    /// The events a report stands for (an `event.finished` only once the event is final
    /// over all its shards).
    func resolve(_ r: Pending, _ s: inout DispatchState) -> [WebhookEvent] {
        switch r {
        case .closed(let channel, let why): return [.channelClosed(channel: channel, why: why)]
        case .guardTripped(let channel, let eventID, let share):
            return [.pruneGuardTripped(channel: channel, eventID: eventID, share: share)]
        case .finished(let f):
            guard let e = try? store.event(id: f.eventID), e.state.isFinished else { return [] }
            let c = e.counters
            return [
                .eventFinished(
                    channel: e.channelID, eventID: e.id, seq: e.seq, state: e.state.rawValue, targets: c.targets, sent: c.sent,
                    failed: c.failed, pruned: c.pruned)
            ]
        case .pruned(let num, let tokens, let reason):
            if s.channelIDs[num] == nil { s.channelIDs[num] = (try? store.channel(num: num))?.id }
            guard let channel = s.channelIDs[num] else { return [] }
            return stride(from: 0, to: tokens.count, by: WebhookEvent.maxTokensPerDelivery).map { i in
                .subscriptionPruned(
                    channel: channel, tokens: Array(tokens[i..<min(tokens.count, i + WebhookEvent.maxTokensPerDelivery)]), reason: reason)
            }
        }
    }

    func answer(_ a: Answer, _ s: inout DispatchState, now: Double) -> [WebhookOutbox.Action] {
        let type = a.delivery.event.kind.rawValue
        let outcome: WebhookOutbox.Answer
        switch a.result {
        case .answered(let status, let retryAfter) where (200..<300).contains(status):
            _ = retryAfter
            outcome = .delivered
        case .answered(let status, let retryAfter):
            outcome = .failed(retryAfter: retryAfter)
            logger.info("webhooks.delivery_failed", ["delivery": .int(Int64(a.delivery.id)), "status": .int(Int64(status))])
        case .refusedAddress(let addr):
            outcome = .failed(retryAfter: nil)
            logger.warning("webhooks.address_refused", ["delivery": .int(Int64(a.delivery.id)), "address": .string(addr)])
        case .failed(let e):
            outcome = .failed(retryAfter: nil)
            logger.info("webhooks.delivery_failed", ["delivery": .int(Int64(a.delivery.id)), "error": .string("\(e)")])
        }
        metrics.deliveries(type, outcome == .delivered ? "delivered" : "failed").inc()
        guard s.holding else { return [] }
        return s.outbox.answered(
            id: a.delivery.id, webhookID: a.delivery.webhookID, outcome, now: now, unit: Double.random(in: 0..<1, using: &s.random))
    }

    func execute(_ actions: [WebhookOutbox.Action], _ s: inout DispatchState) {
        var removed: [Int64] = []
        var dropped: [String] = []
        // Counted once the rows are gone (a reader of the counter then sees the table without them).
        defer { for reason in dropped { metrics.dropped(reason).inc() } }
        for a in actions {
            switch a {
            case .store: break  // reports are written by `write`, never through `enqueue`
            case .update(let d):
                do {
                    try store.rescheduleWebhookDelivery(id: Int64(d.id), attempts: d.attempts, notBeforeMillis: Int64(d.notBefore * 1000))
                } catch {
                    logger.warning("webhooks.reschedule_failed", ["delivery": .int(Int64(d.id)), "error": .string("\(error)")])
                }
            case .delivered(let id): removed.append(Int64(id))
            case .drop(let id, let w, let reason, let tokens):
                if let id { removed.append(Int64(id)) }
                dropped.append(reason.rawValue)
                logger.warning(
                    "webhooks.delivery_dropped",
                    [
                        "webhook_id": .string(w), "reason": .string(reason.rawValue), "tokens": .int(Int64(tokens)),
                        "delivery": id.map { .int(Int64($0)) } ?? .null,
                    ])
            case .send(let d): send(d, &s)
            }
        }
        if !removed.isEmpty {
            do {
                try store.removeWebhookDeliveries(ids: removed)
            } catch {
                // Left in the table: sent again after a restart (at least once).
                logger.warning("webhooks.remove_failed", ["error": .string("\(error)")])
            }
        }
    }

    /// Signs `d` and hands it to a poster thread.
    func send(_ d: WebhookDelivery, _ s: inout DispatchState) {
        guard let w = s.webhooks[d.webhookID], let secret = s.secrets[d.webhookID] else {
            // Deleted meanwhile, or its secret cannot be opened: answered as failed, retried.
            cond.lock()
            answers.append(Answer(delivery: d, result: .failed(CurlError(code: 0, message: "webhook unknown or secret unreadable"))))
            cond.unlock()
            return
        }
        let body = d.event.body(id: "whd_\(d.id)", createdAt: Int64(d.createdAt)).encoded()
        let t = clock.nowSeconds()
        let headers = [
            ("Herald-Signature", WebhookSignature.header(secret: secret, timestamp: t, body: body)), ("Herald-Delivery", "whd_\(d.id)"),
        ]
        jobCond.lock()
        jobs.append(Job(delivery: d, url: w.url, body: body, headers: headers))
        jobCond.signal()
        jobCond.unlock()
    }

    /// A poster thread: one libcurl handle, one post at a time.
    func post() {
        let poster = try? WebhookPoster(config: config.poster)
        while true {
            jobCond.lock()
            while jobs.isEmpty && !isStopping() { _ = jobCond.wait(until: Date(timeIntervalSinceNow: 0.5)) }
            if jobs.isEmpty {
                jobCond.unlock()
                return
            }
            let job = jobs.removeFirst()
            jobCond.unlock()
            let result =
                poster?.post(url: job.url, body: job.body, headers: job.headers)
                ?? .failed(CurlError(code: 2, message: "libcurl could not be set up"))
            cond.lock()
            answers.append(Answer(delivery: job.delivery, result: result))
            cond.signal()
            cond.unlock()
        }
    }

    func isStopping() -> Bool {
        cond.lock()
        defer { cond.unlock() }
        return stopping
    }
}
