/// One delivery waiting in the outbox: an event for one webhook.
public struct WebhookDelivery: Sendable, Equatable {
    /// Increases with every delivery created: the order within a webhook.
    public let id: UInt64
    public let webhookID: String
    public var event: WebhookEvent
    /// Unix seconds (fractional) when it was created.
    public let createdAt: Double
    /// Tries that failed so far.
    public var attempts: Int
    /// Not tried before this time.
    public var notBefore: Double
}

/// The outbox's decisions, as a value (no I/O, no clock, no randomness of its own): which
/// delivery goes out next, what a failure does, what a full outbox does. The shell persists
/// what the actions say, posts what they say, and feeds the answers back.
///
/// Rules (design, "Webhooks"):
/// - In order per webhook: only the oldest delivery of a webhook is ever in flight or
///   due; the ones behind it wait, also while it is retried.
/// - Retried with backoff and jitter (`WebhookRetrySchedule`) until 24 h after it was
///   created, then dropped (`drop(_, .expired)`), and the next one goes.
/// - Bounded: at most `capacity` deliveries wait. `subscription.pruned` tokens join the
///   newest waiting delivery of the same webhook, channel and reason while it has room
///   (≤ 1 000 tokens, not in flight) — so a full outbox merges pruned tokens instead of
///   blocking the fan-out; what still does not fit, and any other event while full, is
///   dropped and counted (`drop(_, .outboxFull)`), never waited for.
/// - At most `maxInFlight` deliveries in flight over all webhooks.
public struct WebhookOutbox: Sendable {
    public enum DropReason: String, Sendable, Equatable {
        case expired
        case outboxFull = "outbox_full"
        case webhookDeleted = "webhook_deleted"
    }

    public enum Action: Sendable, Equatable {
        /// Persist a new delivery.
        case store(WebhookDelivery)
        /// Persist a changed delivery (tokens merged into it, or its next try rescheduled).
        case update(WebhookDelivery)
        /// Post it now.
        case send(WebhookDelivery)
        /// It was answered 2xx: remove it.
        case delivered(id: UInt64)
        /// Remove it unsent (or after its last try), and count why. `id` is nil for an
        /// event that never became a delivery (refused by a full outbox); `tokens` counts
        /// pruned tokens lost with it.
        case drop(id: UInt64?, webhookID: String, reason: DropReason, tokens: Int)
    }

    public let capacity: Int
    public let maxInFlight: Int
    public let schedule: WebhookRetrySchedule
    private var queues: [String: [WebhookDelivery]] = [:]
    private var inFlight: Set<String> = []
    public private(set) var count = 0
    private var nextID: UInt64

    /// `restored` are the deliveries the database kept (after a restart), any order.
    public init(
        capacity: Int = 100_000, maxInFlight: Int = 16, schedule: WebhookRetrySchedule = WebhookRetrySchedule(),
        restored: [WebhookDelivery] = []
    ) {
        self.capacity = capacity
        self.maxInFlight = maxInFlight
        self.schedule = schedule
        nextID = (restored.map(\.id).max() ?? 0) + 1
        for d in restored.sorted(by: { $0.id < $1.id }) { queues[d.webhookID, default: []].append(d) }
        count = restored.count
    }

    /// Takes a delivery another part already persisted (the outbox table's row, with the
    /// table's id), behind the waiting ones of its webhook. Ids must increase per webhook;
    /// one already held is ignored. Past `capacity` it is still taken (it is durable), so
    /// `count` may exceed `capacity` until the outbox drains.
    public mutating func adopt(_ d: WebhookDelivery) {
        if let last = queues[d.webhookID]?.last, last.id >= d.id { return }
        queues[d.webhookID, default: []].append(d)
        count += 1
        nextID = max(nextID, d.id + 1)
    }

    /// Deliveries in flight now.
    public var inFlightCount: Int { inFlight.count }

    /// The oldest waiting delivery's creation time (for the "oldest undelivered" gauge).
    public var oldestCreatedAt: Double? { queues.values.compactMap(\.first?.createdAt).min() }

    /// `event` happened; `webhookIDs` are the webhooks subscribed to it (their event types
    /// and channel patterns matched by the caller).
    public mutating func enqueue(_ event: WebhookEvent, for webhookIDs: [String], now: Double) -> [Action] {
        var actions: [Action] = []
        for w in webhookIDs {
            if case .subscriptionPruned(let channel, let tokens, let reason) = event {
                enqueuePruned(w, channel, tokens, reason, now, &actions)
            } else if count < capacity {
                actions.append(.store(append(w, event, now)))
            } else {
                actions.append(.drop(id: nil, webhookID: w, reason: .outboxFull, tokens: 0))
            }
        }
        return actions + tick(now: now)
    }

    private mutating func enqueuePruned(
        _ w: String, _ channel: String, _ tokens: [String], _ reason: String, _ now: Double, _ actions: inout [Action]
    ) {
        var rest = tokens[...]
        // Into the newest waiting delivery of the same kind, if it is not in flight.
        if var queue = queues[w], let last = queue.indices.last, !(last == 0 && inFlight.contains(w)),
            case .subscriptionPruned(channel, var held, reason) = queue[last].event, held.count < WebhookEvent.maxTokensPerDelivery
        {
            let take = min(rest.count, WebhookEvent.maxTokensPerDelivery - held.count)
            held.append(contentsOf: rest.prefix(take))
            rest = rest.dropFirst(take)
            queue[last].event = .subscriptionPruned(channel: channel, tokens: held, reason: reason)
            queues[w] = queue
            actions.append(.update(queue[last]))
        }
        while !rest.isEmpty {
            guard count < capacity else {
                actions.append(.drop(id: nil, webhookID: w, reason: .outboxFull, tokens: rest.count))
                return
            }
            let chunk = Array(rest.prefix(WebhookEvent.maxTokensPerDelivery))
            rest = rest.dropFirst(chunk.count)
            actions.append(.store(append(w, .subscriptionPruned(channel: channel, tokens: chunk, reason: reason), now)))
        }
    }

    private mutating func append(_ w: String, _ event: WebhookEvent, _ now: Double) -> WebhookDelivery {
        let d = WebhookDelivery(id: nextID, webhookID: w, event: event, createdAt: now, attempts: 0, notBefore: now)
        nextID += 1
        queues[w, default: []].append(d)
        count += 1
        return d
    }

    /// The deliveries due now: each webhook's oldest, if it is not in flight and its time
    /// has come, oldest first, up to `maxInFlight` in flight.
    public mutating func tick(now: Double) -> [Action] {
        let due = queues.compactMap { w, q -> WebhookDelivery? in
            guard let head = q.first, !inFlight.contains(w), head.notBefore <= now else { return nil }
            return head
        }.sorted { $0.id < $1.id }
        var actions: [Action] = []
        for d in due where inFlight.count < maxInFlight {
            inFlight.insert(d.webhookID)
            actions.append(.send(d))
        }
        return actions
    }

    /// When `tick` next has something to send (nil: nothing waits, or all waiting are
    /// behind a delivery in flight).
    public func nextDue() -> Double? {
        queues.compactMap { w, q in inFlight.contains(w) ? nil : q.first?.notBefore }.min()
    }

    /// How a post of a delivery ended.
    public enum Answer: Sendable, Equatable {
        case delivered
        /// Not 2xx, a timeout, a refused connection; `retryAfter` seconds if the receiver said.
        case failed(retryAfter: Double?)
    }

    /// The answer for delivery `id` of `webhookID`. `unit` is a random number in [0, 1)
    /// for the jitter.
    public mutating func answered(id: UInt64, webhookID w: String, _ answer: Answer, now: Double, unit: Double) -> [Action] {
        guard inFlight.contains(w), var q = queues[w], let head = q.first, head.id == id else { return [] }
        inFlight.remove(w)
        var actions: [Action] = []
        switch answer {
        case .delivered:
            q.removeFirst()
            count -= 1
            actions.append(.delivered(id: id))
        case .failed(let retryAfter):
            var d = head
            d.attempts += 1
            if let at = schedule.next(attempts: d.attempts, createdAt: d.createdAt, now: now, unit: unit, retryAfter: retryAfter) {
                d.notBefore = at
                q[0] = d
                actions.append(.update(d))
            } else {
                q.removeFirst()
                count -= 1
                actions.append(.drop(id: id, webhookID: w, reason: .expired, tokens: Self.tokens(head.event)))
            }
        }
        queues[w] = q.isEmpty ? nil : q
        return actions + tick(now: now)
    }

    /// A webhook was deleted: its waiting deliveries go (one in flight is let finish, and
    /// its answer then ignored).
    public mutating func removeWebhook(_ w: String) -> [Action] {
        guard let q = queues.removeValue(forKey: w) else { return [] }
        inFlight.remove(w)
        count -= q.count
        return q.map { .drop(id: $0.id, webhookID: w, reason: .webhookDeleted, tokens: Self.tokens($0.event)) }
    }

    private static func tokens(_ e: WebhookEvent) -> Int {
        if case .subscriptionPruned(_, let t, _) = e { return t.count }
        return 0
    }
}
