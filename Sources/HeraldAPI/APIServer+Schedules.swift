import HeraldAPNS
import HeraldCore
import HeraldHTTPServer
import HeraldStore

/// The second-round routes of issue 15: scheduled publishes (`send_at`), the event
/// listing, cancelling, and `PATCH /v1/channels/{id}`.
extension APIServer {
    /// A publish with `send_at` (the body's other fields are a publish's): stored at once,
    /// 202 `scheduled`. `object` is the body without `send_at`.
    func schedule(_ req: HTTPRequest, _ channel: String, object: [String: JSON], sendAt: Int64, key: String?, dryRun: Bool) throws
        -> HTTPResponse
    {
        let body = JSON.object(object)
        let event: LiveActivityEvent
        do {
            event = try LiveActivityEvent.validate(body)
        } catch {
            throw APIError(error)
        }
        try refuseLost(channel)
        let r = try store.schedule(
            channelID: channel, event: event, body: body.encoded(), sendAt: sendAt, idempotencyKey: key, dryRun: dryRun)
        if dryRun {
            return .json(
                200,
                [
                    "dry_run": true, "event": .string(event.kind.rawValue), "payload": (try? JSON.parse(r.event.payload)) ?? .null,
                    "payload_bytes": .int(Int64(r.event.payload.count)), "limit_bytes": .int(Int64(r.limit)),
                    "targets": .int(r.targets), "broadcast": .bool(r.channel.mode.usesBroadcast && event.kind != .start),
                    "priority": .int(Int64(r.event.priority)), "aps_timestamp": .int(r.event.apsTimestamp),
                    "send_at": .int(sendAt), "state": .string(EventState.scheduled.rawValue),
                ])
        }
        if r.created {
            dutyBell.ring()
            logger.info(
                "api.event_scheduled",
                [
                    "channel": .string(channel), "event_id": .string(r.event.id), "send_at": .int(sendAt),
                    "kind": .string(event.kind.rawValue),
                ])
        }
        let answer: JSON = [
            "event_id": .string(r.event.id), "seq": .int(r.event.seq), "state": .string(r.event.state.rawValue),
            "aps_timestamp": .int(r.event.apsTimestamp), "channel": .string(channel),
            "send_at": r.event.sendAt.map { .int($0) } ?? .null,
        ]
        return .json(r.created ? 202 : 200, answer, headers: [("location", "/v1/channels/\(channel)/events/\(r.event.id)")])
    }

    /// `GET /v1/channels/{id}/events?state=S&limit=N&before=SEQ`: newest first.
    func listEvents(_ req: HTTPRequest, _ channel: String) throws -> HTTPResponse {
        let q = try EventListQuery(req.query)
        let events = try store.events(channelID: channel, state: q.state, beforeSeq: q.before, limit: q.limit)
        let next: JSON = events.count == q.limit ? events.last.map { .int($0.seq) } ?? .null : .null
        return .json(200, ["events": .array(events.map(Render.event)), "next_before": next])
    }

    /// `DELETE /v1/channels/{id}/events/{event_id}`: cancels a scheduled event.
    func cancelEvent(_ channel: String, _ id: String) throws -> HTTPResponse {
        let e = try store.cancel(channelID: channel, eventID: id)
        logger.info("api.event_cancelled", ["channel": .string(channel), "event_id": .string(id)])
        return .json(200, Render.event(e))
    }

    /// `PATCH /v1/channels/{id}`: `catch_up`, `min_interval_ms`, `priority10_budget_per_hour`,
    /// `expires_at` (unix s or null).
    func patchChannel(_ req: HTTPRequest, _ id: String) throws -> HTTPResponse {
        let o = try object(try jsonBody(req)!)
        try refuseUnknown(o, allowed: ["catch_up", "min_interval_ms", "priority10_budget_per_hour", "expires_at"])
        let change = try Self.channelChange(o, now: store.clock.nowSeconds())
        guard let before = try store.channel(id: id) else { throw StoreError.channelNotFound(id) }
        guard before.isOpen else { throw StoreError.channelClosed(id) }
        let ch = try store.updateChannel(id: id, change)
        if change.expiresAt != nil { dutyBell.ring() }
        logger.info(
            "api.channel_changed",
            ["channel": .string(id), "expires_at": ch.expiresAt.map { .int($0) } ?? .null, "catch_up": .bool(ch.catchUp)])
        return .json(
            200,
            Render.channel(ch, counts: try store.subscriberCounts(channelNum: ch.num), lastEvent: try store.lastEvent(channelNum: ch.num)))
    }

    /// The settings fields of a create or a `PATCH` body (absent: unchanged). `expires_at`
    /// must not be in the past (`now`, unix s).
    static func channelChange(_ o: [String: JSON], now: Int64) throws -> ChannelChange {
        var change = ChannelChange()
        if let v = o["catch_up"], v != .null {
            guard let b = v.boolValue else { throw APIError.invalid("catch_up", "must be true or false") }
            change.catchUp = b
        }
        if let v = o["min_interval_ms"], v != .null {
            guard let n = v.intValue, (0...86_400_000).contains(n) else { throw APIError.invalid("min_interval_ms", "must be 0-86400000") }
            change.minIntervalMillis = n
        }
        if let v = o["priority10_budget_per_hour"], v != .null {
            guard let n = v.intValue, (0...100_000).contains(n) else {
                throw APIError.invalid("priority10_budget_per_hour", "must be 0-100000 (0: no budget)")
            }
            change.priority10BudgetPerHour = n
        }
        if let v = o["expires_at"] {
            if v == .null {
                change.expiresAt = .some(nil)
            } else {
                guard let n = v.intValue, n >= now, n <= now + 366 * 86_400 else {
                    throw APIError.invalid("expires_at", "must be unix seconds from now (\(now)) to a year ahead, or null")
                }
                change.expiresAt = .some(n)
            }
        }
        return change
    }
}

/// The query of the event listing: `state` (an event state), `limit` (1-1000, default 50),
/// `before` (a `seq`, ≥ 1). Throws `APIError` 400 naming the parameter.
struct EventListQuery {
    static let maxLimit = 1000
    var state: EventState?
    var limit = 50
    var before: Int64?

    init(_ query: [String: String]) throws {
        if let s = query["state"] {
            guard let st = EventState(rawValue: s) else {
                let all = EventState.allCases.map(\.rawValue).joined(separator: ", ")
                throw APIError(400, "invalid_field", "'state' must be one of \(all)")
            }
            state = st
        }
        if let l = query["limit"] {
            guard let n = Int(l), (1...Self.maxLimit).contains(n) else {
                throw APIError(400, "invalid_field", "'limit' must be 1-\(Self.maxLimit)")
            }
            limit = n
        }
        if let b = query["before"] {
            guard let n = Int64(b), n >= 1 else { throw APIError(400, "invalid_field", "'before' must be a seq (an integer ≥ 1)") }
            before = n
        }
    }
}
