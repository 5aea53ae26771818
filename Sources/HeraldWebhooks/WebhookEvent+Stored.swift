import HeraldCore

extension WebhookEvent {
    /// The event's own fields as the outbox table keeps them (JSON text, without `type`,
    /// `id`, `created_at`).
    public var storedPayload: String {
        guard var o = body(id: "", createdAt: 0).objectValue else { return "{}" }
        for k in ["type", "id", "created_at"] { o[k] = nil }
        return JSON.object(o).text
    }

    /// The event an outbox row holds; nil for an unknown type or a payload missing fields.
    public init?(type: String, storedPayload: String) {
        guard let kind = Kind(rawValue: type), let j = try? JSON.parse(Array(storedPayload.utf8)),
            let channel = j["channel"]?.stringValue
        else { return nil }
        switch kind {
        case .eventFinished:
            guard let eventID = j["event_id"]?.stringValue, let seq = j["seq"]?.intValue, let state = j["state"]?.stringValue
            else { return nil }
            self = .eventFinished(
                channel: channel, eventID: eventID, seq: seq, state: state, targets: j["targets"]?.intValue ?? 0,
                sent: j["sent"]?.intValue ?? 0, failed: j["failed"]?.intValue ?? 0, pruned: j["pruned"]?.intValue ?? 0)
        case .subscriptionPruned:
            guard let tokens = j["tokens"]?.arrayValue?.compactMap(\.stringValue) else { return nil }
            self = .subscriptionPruned(channel: channel, tokens: tokens, reason: j["reason"]?.stringValue ?? "unregistered")
        case .channelClosed:
            self = .channelClosed(channel: channel, why: j["why"]?.stringValue ?? "deleted")
        case .pruneGuardTripped:
            guard let eventID = j["event_id"]?.stringValue else { return nil }
            self = .pruneGuardTripped(channel: channel, eventID: eventID, share: j["share"]?.numberValue ?? 0)
        }
    }
}
