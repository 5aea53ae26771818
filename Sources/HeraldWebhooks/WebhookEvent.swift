import HeraldCore

/// What a webhook delivery tells (design, "Webhooks"). The body of a delivery is this plus
/// `type`, `id` and `created_at`.
public enum WebhookEvent: Sendable, Equatable {
    case eventFinished(
        channel: String, eventID: String, seq: Int64, state: String, targets: Int64, sent: Int64, failed: Int64, pruned: Int64)
    /// Hex tokens APNs invalidated, at most `WebhookEvent.maxTokensPerDelivery` per delivery.
    case subscriptionPruned(channel: String, tokens: [String], reason: String)
    case channelClosed(channel: String, why: String)
    case pruneGuardTripped(channel: String, eventID: String, share: Double)

    /// Tokens in one `subscription.pruned` delivery, at most.
    public static let maxTokensPerDelivery = 1_000

    /// The closed set of event types, as subscribed to in `POST /v1/webhooks`.
    public enum Kind: String, Sendable, CaseIterable {
        case eventFinished = "event.finished"
        case subscriptionPruned = "subscription.pruned"
        case channelClosed = "channel.closed"
        case pruneGuardTripped = "prune_guard.tripped"
    }

    public var kind: Kind {
        switch self {
        case .eventFinished: .eventFinished
        case .subscriptionPruned: .subscriptionPruned
        case .channelClosed: .channelClosed
        case .pruneGuardTripped: .pruneGuardTripped
        }
    }

    public var channel: String {
        switch self {
        case .eventFinished(let c, _, _, _, _, _, _, _), .subscriptionPruned(let c, _, _), .channelClosed(let c, _),
            .pruneGuardTripped(let c, _, _):
            c
        }
    }

    /// The JSON body of delivery `id` created at `createdAt` (unix seconds).
    public func body(id: String, createdAt: Int64) -> JSON {
        var o: [String: JSON] = [
            "type": .string(kind.rawValue), "id": .string(id), "created_at": .int(createdAt), "channel": .string(channel),
        ]
        switch self {
        case .eventFinished(_, let eventID, let seq, let state, let targets, let sent, let failed, let pruned):
            o["event_id"] = .string(eventID)
            o["seq"] = .int(seq)
            o["state"] = .string(state)
            o["targets"] = .int(targets)
            o["sent"] = .int(sent)
            o["failed"] = .int(failed)
            o["pruned"] = .int(pruned)
        case .subscriptionPruned(_, let tokens, let reason):
            o["tokens"] = .array(tokens.map { .string($0) })
            o["reason"] = .string(reason)
        case .channelClosed(_, let why):
            o["why"] = .string(why)
        case .pruneGuardTripped(_, let eventID, let share):
            o["event_id"] = .string(eventID)
            o["share"] = .double(share)
        }
        return .object(o)
    }
}
