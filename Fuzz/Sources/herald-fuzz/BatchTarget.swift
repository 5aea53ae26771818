import HeraldAPI
import HeraldCore

/// `POST /v1/channels/{id}/subscriptions:batch` bodies. `BatchBody` decodes with a typed
/// decoder (for speed) while the other bodies go through the `JSON` tree; this target holds
/// the two to the same answer: `Reference.decode` states the documented rules over the tree
/// and every input must get the same entries, or the same status and code.
enum BatchTarget {
    static func run(_ data: [UInt8]) {
        let expected = Reference.decode(data)
        switch (Result { try BatchBody.decode(data) }, expected) {
        case (.success(let got), .success(let want)):
            FuzzCheck.expect(
                got.subscribe.map(Reference.Entry.init) == want.subscribe && got.unsubscribe == want.unsubscribe,
                "accepted with other entries than the reference: \(got) vs \(want)")
        case (.failure(let error), .failure(let want)):
            guard let e = error as? APIError else { FuzzCheck.fail("threw a non-API error: \(error)") }
            FuzzCheck.expect(
                e.status == want.status && e.code == want.code,
                "refused with \(e.status) \(e.code) (\(e.message)), the reference says \(want.status) \(want.code)")
        case (.success(let got), .failure(let want)):
            FuzzCheck.fail("accepted \(got), the reference refuses it with \(want.status) \(want.code)")
        case (.failure(let error), .success(let want)):
            FuzzCheck.fail("refused (\(error)), the reference accepts \(want)")
        }
    }

    /// The batch body's rules (docs/openapi.yaml, BatchBody's documentation) over the JSON tree.
    enum Reference {
        struct Entry: Equatable {
            var token: String
            var kind: String?
            var expiresAt: Int64?
            init(token: String, kind: String?, expiresAt: Int64?) {
                self.token = token
                self.kind = kind
                self.expiresAt = expiresAt
            }
            init(_ e: BatchBody.Entry) { self.init(token: e.token, kind: e.kind, expiresAt: e.expiresAt) }
        }
        struct Body {
            var subscribe: [Entry] = []
            var unsubscribe: [String] = []
        }
        struct Refusal: Error {
            var status: Int
            var code: String
        }

        static func decode(_ data: [UInt8]) -> Result<Body, Refusal> {
            guard let json = try? JSON.parse(data) else { return .failure(Refusal(status: 400, code: "invalid_json")) }
            guard let top = json.objectValue else { return .failure(Refusal(status: 400, code: "invalid_body")) }
            if top.keys.contains(where: { $0 != "subscribe" && $0 != "unsubscribe" }) {
                return .failure(Refusal(status: 422, code: "unknown_field"))
            }
            var body = Body()
            if let s = top["subscribe"], s != .null {
                guard let list = s.arrayValue else { return .failure(Refusal(status: 422, code: "invalid_field")) }
                for item in list {
                    if case .string(let t) = item {
                        body.subscribe.append(Entry(token: t, kind: nil, expiresAt: nil))
                        continue
                    }
                    guard let o = item.objectValue else { return .failure(Refusal(status: 422, code: "invalid_field")) }
                    if o.keys.contains(where: { !["token", "kind", "expires_at"].contains($0) }) {
                        return .failure(Refusal(status: 422, code: "unknown_field"))
                    }
                    guard let t = o["token"], t != .null else { return .failure(Refusal(status: 422, code: "missing_field")) }
                    guard case .string(let token) = t else { return .failure(Refusal(status: 422, code: "invalid_field")) }
                    var entry = Entry(token: token, kind: nil, expiresAt: nil)
                    if let k = o["kind"], k != .null {
                        guard case .string(let kind) = k else { return .failure(Refusal(status: 422, code: "invalid_field")) }
                        entry.kind = kind
                    }
                    if let x = o["expires_at"], x != .null {
                        guard case .int(let v) = x else { return .failure(Refusal(status: 422, code: "invalid_field")) }
                        entry.expiresAt = v
                    }
                    body.subscribe.append(entry)
                }
            }
            if let u = top["unsubscribe"], u != .null {
                guard let list = u.arrayValue else { return .failure(Refusal(status: 422, code: "invalid_field")) }
                for item in list {
                    guard case .string(let t) = item else { return .failure(Refusal(status: 422, code: "invalid_field")) }
                    body.unsubscribe.append(t)
                }
            }
            return .success(body)
        }
    }
}
