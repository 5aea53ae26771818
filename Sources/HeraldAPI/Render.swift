import HeraldAPNS
import HeraldCore
import HeraldStore

/// JSON shapes of the API (docs/openapi.yaml). Times are integer unix seconds.
enum Render {
    static func seconds(_ ms: Int64?) -> JSON { ms.map { .int($0 / 1000) } ?? .null }

    static func channel(_ c: Channel, counts: (activity: Int64, pushToStart: Int64)?, lastEvent: EventRecord?) -> JSON {
        var o: [String: JSON] = [
            "id": .string(c.id), "bundle_id": .string(c.bundleID), "mode": .string(c.mode.rawValue),
            "environment": .string(c.environment.rawValue), "storage_policy": .string(c.storagePolicy.rawValue),
            "apns_channel_id": c.apnsChannelID.map { .string($0) } ?? .null, "state": .string(c.isOpen ? "open" : "closed"),
            "created_at": seconds(c.createdAtMillis), "closed_at": seconds(c.closedAtMillis),
            "last_event": lastEvent.map(event) ?? .null, "expires_at": c.expiresAt.map { .int($0) } ?? .null,
            "settings": .object([
                "catch_up": .bool(c.catchUp), "min_interval_ms": .int(c.minIntervalMillis),
                "priority10_budget_per_hour": .int(c.priority10BudgetPerHour),
            ]),
        ]
        if let counts {
            o["subscribers"] = .object([
                "activity": .int(counts.activity), "push_to_start": .int(counts.pushToStart),
                "total": .int(counts.activity + counts.pushToStart),
            ])
        }
        return .object(o)
    }

    static func event(_ e: EventRecord) -> JSON {
        .object([
            "event_id": .string(e.id), "channel": .string(e.channelID), "seq": .int(e.seq), "event": .string(e.kind.rawValue),
            "state": .string(e.state.rawValue), "priority": .int(Int64(e.priority)), "aps_timestamp": .int(e.apsTimestamp),
            "targets": .int(e.counters.targets), "sent": .int(e.counters.sent), "failed": .int(e.counters.failed),
            "pruned": .int(e.counters.pruned), "retried": .int(e.counters.retried), "skipped": .int(e.counters.skipped),
            "failure_reason": e.failureReason.map { .string($0) } ?? .null,
            "superseded_by": e.supersededBy.map { .string($0) } ?? .null, "broadcast": .string(e.broadcastState.rawValue),
            "broadcast_reason": e.broadcastReason.map { .string($0) } ?? .null,
            "created_at": seconds(e.createdAtMillis), "started_at": seconds(e.startedAtMillis),
            "finished_at": seconds(e.finishedAtMillis), "send_at": e.sendAt.map { .int($0) } ?? .null,
        ])
    }

    static func key(_ k: APIKey) -> JSON {
        .object([
            "id": .string(k.id), "role": .string(k.role.rawValue), "channels": .array(k.channels.map { .string($0) }),
            "label": k.label.map { .string($0) } ?? .null, "created_at": seconds(k.createdAtMillis),
            "revoked_at": seconds(k.revokedAtMillis), "last_used_at": seconds(k.lastUsedAtMillis),
        ])
    }

    static func subscription(_ s: Subscription) -> JSON {
        .object([
            "channel": .string(s.channelID), "token": .string(Hex.encode(s.token)), "kind": .string(s.kind.rawValue),
            "registered_at": seconds(s.registeredAtMillis), "expires_at": s.expiresAt.map { .int($0) } ?? .null,
        ])
    }
}
