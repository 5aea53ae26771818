import HeraldCore
import HeraldCrypto
import HeraldPostgres
import HeraldStore

/// API keys exactly as SQLite's `Store` keeps them: the secret `hk_<id>_<256 random bits>`
/// is returned once and only its SHA-256 is stored; authentication compares hashes in
/// constant time.
extension PostgresStore {
    static let keyColumns = "id, role, channels::text AS channels, secret_hash, label, created_at_ms, revoked_at_ms, last_used_at_ms"

    static func key(_ r: PostgresRow) throws(PostgresError) -> APIKey {
        let patterns = (try? JSON.parse(try r.text("channels")))?.arrayValue?.compactMap(\.stringValue) ?? []
        return APIKey(
            id: try r.text("id"), role: KeyRole(rawValue: try r.text("role")) ?? .subscriber, channels: patterns,
            label: r["label"]?.textValue, createdAtMillis: try r.int64("created_at_ms"), revokedAtMillis: r["revoked_at_ms"]?.int64Value,
            lastUsedAtMillis: r["last_used_at_ms"]?.int64Value, storedSecretHash: try r.bytea("secret_hash"))
    }

    public func createKey(role: KeyRole, channels: [String], label: String?) throws -> (APIKey, secret: String) {
        let id = Self.newID("key_")
        let made = APIKeySecret(keyID: id)
        let (secret, hash) = (made.secret, made.hash)
        let now = clock.nowMillis()
        let patterns = JSON.array(channels.map { .string($0) }).text
        let key = try write { c in
            try Self.key(
                try c.queryOne(
                    """
                    INSERT INTO api_keys (id, role, channels, secret_hash, label, created_at_ms) VALUES ($1, $2, $3::jsonb, $4, $5, $6)
                    RETURNING \(Self.keyColumns)
                    """, [.text(id), .text(role.rawValue), .text(patterns), .bytea(hash), label.parameter, .int8(now)])!)
        }
        return (key, secret)
    }

    /// Every key, newest first.
    public func keys() throws -> [APIKey] {
        try read { c in
            try c.query("SELECT \(Self.keyColumns) FROM api_keys ORDER BY created_at_ms DESC, id COLLATE \"C\"")
                .map { r throws(PostgresError) in try Self.key(r) }
        }
    }

    /// Revokes a key (kept, for the audit trail). Throws `keyNotFound`.
    public func revokeKey(id: String) throws -> APIKey {
        let now = clock.nowMillis()
        return try write { c in
            guard
                let r = try c.queryOne(
                    "UPDATE api_keys SET revoked_at_ms = COALESCE(revoked_at_ms, $1) WHERE id = $2 RETURNING \(Self.keyColumns)",
                    [.int8(now), .text(id)])
            else { throw StoreError.keyNotFound(id) }
            return try Self.key(r)
        }
    }

    /// The live key whose secret is `secret`, comparing hashes in constant time. Nil for
    /// unknown, malformed or revoked secrets.
    public func authenticate(secret: String) throws -> APIKey? {
        let parts = secret.split(separator: "_", maxSplits: 2)
        guard parts.count == 3, parts[0] == "hk", parts[1].count <= 40 else { return nil }
        let id = "key_" + parts[1]
        guard let r = try read({ c in try c.queryOne("SELECT \(Self.keyColumns) FROM api_keys WHERE id = $1", [.text(id)]) })
        else { return nil }
        let key = try Self.translating { try Self.key(r) }
        let stored = try Self.translating { try r.bytea("secret_hash") }
        guard constantTimeEquals(APIKeySecret.hash(secret), stored), key.revokedAtMillis == nil else { return nil }
        return key
    }

    /// Records that a key was used (at most once a minute per key, non-blocking).
    public func touchKey(_ key: APIKey) {
        let now = clock.nowMillis()
        guard now - (key.lastUsedAtMillis ?? 0) > 60_000 else { return }
        let id = key.id
        queue({ c in _ = try c.run("UPDATE api_keys SET last_used_at_ms = $1 WHERE id = $2", [.int8(now), .text(id)]) }, { _ in })
    }
}

extension PostgresStore: HeraldStorage {}
