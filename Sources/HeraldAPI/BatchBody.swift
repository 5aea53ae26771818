import Foundation
import HeraldCore

/// The body of `POST /v1/channels/{id}/subscriptions:batch`:
/// `{"subscribe":[{"token","kind"?,"expires_at"?} | "hex", ...], "unsubscribe":["hex", ...],
/// "catch_up": bool?}`.
///
/// Decoded with a typed decoder (a hundred thousand entries must not cost a tree of JSON
/// values), but as strictly as the other bodies: an unknown field is refused rather than
/// ignored (a typo such as `"unsubscibe"` would otherwise answer 200 and do nothing), and a
/// wrongly typed member is a 422 naming the entry, not an "invalid JSON" 400.
package struct BatchBody: Decodable {
    package struct Entry {
        package var token: String
        package var kind: String?
        package var expiresAt: Int64?
    }

    package var subscribe: [Entry] = []
    package var unsubscribe: [String] = []
    /// False skips the late joiners' catch-up for this batch (a migration of tokens whose
    /// activities already show the current state). Default true.
    package var catchUp = true

    static let fields: Set<String> = ["subscribe", "unsubscribe", "catch_up"]
    static let entryFields: Set<String> = ["token", "kind", "expires_at"]

    /// Parses `bytes`. Throws `APIError`: 400 `invalid_json` when they are not JSON, 400
    /// `invalid_body` when not an object, 422 `unknown_field` / `missing_field` /
    /// `invalid_field` naming the member at fault. Any thread.
    package static func decode(_ bytes: [UInt8]) throws -> BatchBody {
        do {
            return try JSONDecoder().decode(BatchBody.self, from: Data(bytes))
        } catch {
            // Foundation checks the syntax lazily: a number like "00" at the top, or a key
            // that is not UTF-8 inside an entry, surfaces as a type mismatch or as one of the
            // entry errors below. Bytes that are not JSON at all are always `invalid_json`, as
            // for the other bodies (found by scripts/fuzz, target batch; error path only).
            guard (try? JSON.parse(bytes)) != nil else { throw APIError(400, "invalid_json", "the body is not valid JSON") }
            if let e = error as? APIError { throw e }
            throw APIError(400, "invalid_body", "the body must be a JSON object {\"subscribe\":[...],\"unsubscribe\":[...]}")
        }
    }

    package init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: AnyKey.self)
        if let k = c.allKeys.map(\.stringValue).sorted().first(where: { !Self.fields.contains($0) }) {
            throw APIError(422, "unknown_field", "unknown field '\(k)'; expected subscribe, unsubscribe, catch_up")
        }
        if Self.present(c, .catchUp) {
            guard let b = try? c.decode(Bool.self, forKey: .catchUp) else {
                throw APIError(422, "invalid_field", "'catch_up' must be true or false")
            }
            catchUp = b
        }
        if Self.present(c, .subscribe) {
            var list = try Self.array(c, .subscribe)
            subscribe.reserveCapacity(list.count ?? 0)
            while !list.isAtEnd {
                let i = list.currentIndex
                subscribe.append(try Self.entry(&list, index: i))
            }
        }
        if Self.present(c, .unsubscribe) {
            var list = try Self.array(c, .unsubscribe)
            unsubscribe.reserveCapacity(list.count ?? 0)
            while !list.isAtEnd {
                let i = list.currentIndex
                guard let s = try? list.decode(String.self) else {
                    throw APIError(422, "invalid_field", "unsubscribe[\(i)] must be a hex token string; nothing was applied")
                }
                unsubscribe.append(s)
            }
        }
    }

    private static func array(_ c: KeyedDecodingContainer<AnyKey>, _ key: AnyKey) throws -> UnkeyedDecodingContainer {
        do {
            return try c.nestedUnkeyedContainer(forKey: key)
        } catch {
            throw APIError(422, "invalid_field", "'\(key.stringValue)' must be an array")
        }
    }

    /// One `subscribe` entry: a hex string, or an object with `token` and optional `kind`,
    /// `expires_at`.
    private static func entry(_ list: inout UnkeyedDecodingContainer, index i: Int) throws -> Entry {
        let decoder: Decoder
        do {
            decoder = try list.superDecoder()
        } catch {
            throw APIError(422, "invalid_field", "subscribe[\(i)] must be a hex token or an object")
        }
        if let s = try? decoder.singleValueContainer().decode(String.self) {
            return Entry(token: s)
        }
        guard let o = try? decoder.container(keyedBy: AnyKey.self) else {
            throw APIError(422, "invalid_field", "subscribe[\(i)] must be a hex token or {\"token\",\"kind\",\"expires_at\"}")
        }
        if let k = o.allKeys.map(\.stringValue).sorted().first(where: { !entryFields.contains($0) }) {
            throw APIError(422, "unknown_field", "subscribe[\(i)]: unknown field '\(k)'; expected token, kind, expires_at")
        }
        guard present(o, .token) else { throw APIError(422, "missing_field", "subscribe[\(i)].token is required") }
        guard let token = try? o.decode(String.self, forKey: .token) else {
            throw APIError(422, "invalid_field", "subscribe[\(i)].token must be a hex string")
        }
        var kind: String?
        if present(o, .kind) {
            guard let k = try? o.decode(String.self, forKey: .kind) else {
                throw APIError(422, "invalid_field", "subscribe[\(i)].kind must be activity or push-to-start")
            }
            kind = k
        }
        var expiresAt: Int64?
        if present(o, .expiresAt) {
            guard let v = try? o.decode(Int64.self, forKey: .expiresAt) else {
                throw APIError(422, "invalid_field", "subscribe[\(i)].expires_at must be unix seconds (an integer)")
            }
            expiresAt = v
        }
        return Entry(token: token, kind: kind, expiresAt: expiresAt)
    }

    /// The member is there and not null (null counts as absent, as in the other bodies).
    private static func present(_ o: KeyedDecodingContainer<AnyKey>, _ key: AnyKey) -> Bool {
        o.contains(key) && (try? o.decodeNil(forKey: key)) == false
    }
}

/// Any member name (to see the ones a fixed `CodingKey` enum would silently skip).
struct AnyKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }

    static let subscribe = AnyKey(stringValue: "subscribe")
    static let unsubscribe = AnyKey(stringValue: "unsubscribe")
    static let token = AnyKey(stringValue: "token")
    static let kind = AnyKey(stringValue: "kind")
    static let expiresAt = AnyKey(stringValue: "expires_at")
    static let catchUp = AnyKey(stringValue: "catch_up")
}
