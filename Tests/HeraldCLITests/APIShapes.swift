import HeraldCore

/// Objects exactly as /tmp/api-shapes.md documents them, for the stub to answer with.
enum APIShapes {
    static func channel(_ id: String = "match-1", mode: String = "fanout", state: String = "open", lastEvent: JSON = .null)
        -> JSON
    {
        [
            "id": .string(id), "bundle_id": "com.example.app", "mode": .string(mode), "environment": "production",
            "storage_policy": "none", "apns_channel_id": mode == "fanout" ? .null : "dGVzdC1jaGFubmVsLWlk",
            "state": .string(state), "created_at": 1_767_225_600, "closed_at": state == "closed" ? 1_767_229_200 : .null,
            "subscribers": ["activity": 120, "push_to_start": 30, "total": 150], "last_event": lastEvent,
        ]
    }

    static func key(_ id: String = "key_abc123", role: String = "publisher", revoked: Bool = false) -> JSON {
        [
            "id": .string(id), "role": .string(role), "channels": ["match-*"], "label": .null, "created_at": 1_767_225_600,
            "revoked_at": revoked ? 1_767_229_200 : .null, "last_used_at": .null,
        ]
    }

    static func event(
        _ state: String, sent: Int64 = 0, targets: Int64 = 100, failed: Int64 = 0, pruned: Int64 = 0,
        failureReason: JSON = .null, supersededBy: JSON = .null
    ) -> JSON {
        [
            "event_id": "evt_1", "channel": "match-1", "seq": 7, "event": "update", "state": .string(state),
            "priority": 10, "aps_timestamp": 1_767_225_600, "targets": .int(targets), "sent": .int(sent),
            "failed": .int(failed), "pruned": .int(pruned), "retried": 4, "skipped": 0,
            "failure_reason": failureReason, "superseded_by": supersededBy, "broadcast": "none",
            "created_at": 1_767_225_600, "started_at": .null, "finished_at": .null,
        ]
    }

    static let accepted: JSON = [
        "event_id": "evt_1", "seq": 7, "state": "queued", "aps_timestamp": 1_767_225_600, "channel": "match-1",
    ]
}
