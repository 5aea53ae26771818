import HeraldCore
import HeraldCrypto
import HeraldSQL

extension Store {
    static let keyColumns = "id, role, channels, secret_hash, label, created_at_ms, revoked_at_ms, last_used_at_ms"

    static func key(from r: Row) -> APIKey {
        let patterns = (try? JSON.parse(r[2].textValue ?? "[]"))?.arrayValue?.compactMap(\.stringValue) ?? []
        return APIKey(
            id: r[0].textValue ?? "", role: KeyRole(rawValue: r[1].textValue ?? "") ?? .subscriber, channels: patterns,
            label: r[4].textValue, createdAtMillis: r[5].int64Value ?? 0, revokedAtMillis: r[6].int64Value,
            lastUsedAtMillis: r[7].int64Value, secretHash: r[3].blobValue ?? [])
    }

    /// Creates a key. The secret (`hk_<id>_<256 random bits>`) is returned once; only its
    /// SHA-256 is stored.
    public func createKey(role: KeyRole, channels: [String], label: String?) throws -> (APIKey, secret: String) {
        let id = Self.newID("key_")
        let made = APIKeySecret(keyID: id)
        let (secret, hash) = (made.secret, made.hash)
        let now = clock.nowMillis()
        let patterns = JSON.array(channels.map { .string($0) }).text
        let key = try write { c in
            _ = try c.run(
                "INSERT INTO api_keys (id, role, channels, secret_hash, label, created_at_ms) VALUES (?, ?, ?, ?, ?, ?)",
                [.text(id), .text(role.rawValue), .text(patterns), .blob(hash), label.map { .text($0) } ?? .null, .integer(now)])
            return Self.key(from: try c.queryOne("SELECT \(Self.keyColumns) FROM api_keys WHERE id = ?", [.text(id)])!)
        }
        return (key, secret)
    }

    /// Every key, newest first.
    public func keys() throws -> [APIKey] {
        try read { c in try c.query("SELECT \(Self.keyColumns) FROM api_keys ORDER BY created_at_ms DESC, id").map(Self.key) }
    }

    /// Revokes a key (kept, for the audit trail). Throws `keyNotFound`.
    public func revokeKey(id: String) throws -> APIKey {
        let now = clock.nowMillis()
        return try write { c in
            _ = try c.run("UPDATE api_keys SET revoked_at_ms = COALESCE(revoked_at_ms, ?) WHERE id = ?", [.integer(now), .text(id)])
            guard let r = try c.queryOne("SELECT \(Self.keyColumns) FROM api_keys WHERE id = ?", [.text(id)]) else {
                throw StoreError.keyNotFound(id)
            }
            return Self.key(from: r)
        }
    }

    /// The live key whose secret is `secret`, comparing hashes in constant time. Nil for
    /// unknown, malformed or revoked secrets.
    public func authenticate(secret: String) throws -> APIKey? {
        let parts = secret.split(separator: "_", maxSplits: 2)
        guard parts.count == 3, parts[0] == "hk", parts[1].count <= 40 else { return nil }
        let id = "key_" + parts[1]
        guard let key = try read({ c in try c.queryOne("SELECT \(Self.keyColumns) FROM api_keys WHERE id = ?", [.text(id)]) }).map(Self.key)
        else { return nil }
        guard constantTimeEquals(APIKeySecret.hash(secret), key.secretHash), key.revokedAtMillis == nil else { return nil }
        return key
    }

    /// Records that a key was used (at most once a minute per key, non-blocking).
    public func touchKey(_ key: APIKey) {
        let now = clock.nowMillis()
        guard now - (key.lastUsedAtMillis ?? 0) > 60_000 else { return }
        try? db.write(
            { c in
                _ = try c.run("UPDATE api_keys SET last_used_at_ms = ? WHERE id = ?", [.integer(now), .text(key.id)])
            }, completion: { (_: Result<Void, Error>) in })
    }
}
