import Foundation
import HeraldCore
import HeraldTestSupport
import Testing

@testable import HeraldAPI

extension Route {
    /// One value of every route. The switch has no `default`: a route added to the server
    /// does not compile here until it is listed, and then it must be in the spec.
    static var everyCase: [Route] {
        let all: [Route] = [
            .healthz, .readyz, .metrics, .channels, .channel("c"), .keys, .key("k"), .subscription(channel: "c", token: "t"),
            .subscriptionsBatch(channel: "c"), .events(channel: "c"), .event(channel: "c", id: "e"), .reconcile,
        ]
        for r in all {
            switch r {
            case .healthz, .readyz, .metrics, .channels, .channel, .keys, .key, .subscription, .subscriptionsBatch, .events, .event,
                .reconcile:
                break
            }
        }
        return all
    }
}

/// `docs/openapi.yaml` and the server agree: the same routes and methods, the statuses
/// each scenario gets are documented for it, and (with PyYAML) every answer has the
/// documented shape, every accepted body is valid by the spec, and `x-herald-role` is what
/// the server enforces.
@Suite(.liveAPI) struct OpenAPIConformanceTests {
    static let pyYAMLMissing = "python3 with PyYAML (Debian: python3-yaml) is needed to read the whole spec"

    /// A concrete path for a template.
    static func sample(
        _ template: String, channel: String = "c", token: String = freshToken(), key: String = "key_x", event: String = "evt_x"
    )
        -> String
    {
        var p = template
        if template.hasPrefix("/v1/keys/") { p = p.replacingOccurrences(of: "{id}", with: key) }
        return p.replacingOccurrences(of: "{id}", with: channel).replacingOccurrences(of: "{token}", with: token)
            .replacingOccurrences(of: "{event_id}", with: event)
    }

    /// The schema checks below skip only when PyYAML is not installed; a file PyYAML refuses
    /// fails here instead of switching them off.
    @Test func theSpecIsValidYAML() {
        if case .failure(let why) = OpenAPISpec.document {
            #expect(!why.specIsInvalid, "docs/openapi.yaml: \(why)")
        }
    }

    @Test func theLineReaderFindsEveryOperationWithStatuses() throws {
        let routes = try OpenAPISpec.readRoutes()
        #expect(routes.count == 12)
        #expect(routes["/v1/channels/{id}/events"]?["POST"]?.isSuperset(of: [200, 202, 401, 403, 404, 409, 413, 415, 422]) == true)
        for (path, ops) in routes {
            #expect(!ops.isEmpty, "\(path) has operations")
            for (m, statuses) in ops { #expect(!statuses.isEmpty, "\(m) \(path) documents statuses") }
        }
    }

    @Test(.enabled(if: OpenAPISpec.hasDocument, Comment(rawValue: pyYAMLMissing)))
    func theLineReaderAgreesWithAYAMLParser() throws {
        let doc = try OpenAPISpec.document.get()
        var parsed: OpenAPISpec.Routes = [:]
        for (path, item) in doc["paths"]?.objectValue ?? [:] {
            var ops: [String: Set<Int>] = [:]
            for (m, op) in item.objectValue ?? [:] where OpenAPISpec.methods.contains(m) {
                ops[m.uppercased()] = Set((op["responses"]?.objectValue ?? [:]).keys.compactMap { Int($0) })
            }
            parsed[path] = ops
        }
        #expect(try OpenAPISpec.readRoutes() == parsed)
    }

    @Test(.enabled(if: OpenAPISpec.hasDocument, Comment(rawValue: pyYAMLMissing)))
    func theSchemaCheckerRefusesWhatTheSpecDoesNotSay() throws {
        let doc = try OpenAPISpec.document.get()
        let v = SchemaValidator(doc: doc, closed: true)
        let error: JSON = ["$ref": "#/components/schemas/Error"]
        #expect(v.problems(["error": ["code": "not_found", "message": "no"]], error).isEmpty)
        #expect(!v.problems(["error": ["code": "no_such_code", "message": "no"]], error).isEmpty)
        #expect(!v.problems(["error": ["code": "not_found"]], error).isEmpty)
        #expect(!v.problems(["error": ["code": "not_found", "message": "no", "detail": 1]], error).isEmpty)
        let forbidden =
            OpenAPISpec.resolve(doc, ["$ref": "#/components/responses/Forbidden"])["content"]?["application/json"]?["schema"] ?? .null
        #expect(v.problems(["error": ["code": "forbidden", "message": "no"]], forbidden).isEmpty)
        #expect(!v.problems(["error": ["code": "not_found", "message": "no"]], forbidden).isEmpty, "the per-status code is checked")
        let key: JSON = [
            "id": "key_a", "role": "publisher", "channels": ["a"], "label": nil, "created_at": 1, "revoked_at": nil, "last_used_at": nil,
        ]
        let keySchema: JSON = ["$ref": "#/components/schemas/Key"]
        #expect(v.problems(key, keySchema).isEmpty)
        var withSecret = key.objectValue!
        withSecret["secret"] = "hk_x"
        #expect(!v.problems(.object(withSecret), keySchema).isEmpty, "a closed schema refuses an undocumented member")
        #expect(v.problems(.object(withSecret), ["$ref": "#/components/schemas/NewKey"]).isEmpty, "allOf members count")
        var noLabel = key.objectValue!
        noLabel["label"] = nil
        #expect(!v.problems(.object(noLabel), keySchema).isEmpty)
        #expect(!v.problems(["role": "owner"], ["$ref": "#/components/schemas/KeyCreate"]).isEmpty)
        #expect(
            v.problems(["aps": ["event": "update", "content-state": [:], "sound": "x"]], ["$ref": "#/components/schemas/PublishRequest"])
                .isEmpty)
        #expect(
            !v.problems(["aps": ["event": "update", "content-state": [:]], "topic": "x"], ["$ref": "#/components/schemas/PublishRequest"])
                .isEmpty)
        let publish: JSON = ["$ref": "#/components/schemas/PublishRequest"]
        #expect(!v.problems(["aps": ["event": "end", "content-state": [:], "attributes": [:]]], publish).isEmpty, "if/then per event")
        #expect(!v.problems(["aps": ["event": "start", "content-state": [:]]], publish).isEmpty, "start requires attributes")
        #expect(v.problems(["aps": ["event": "end", "content-state": [:], "dismissal-date": 5]], publish).isEmpty)
        #expect(!v.problems(["role": "publisher"], ["$ref": "#/components/schemas/KeyCreate"]).isEmpty, "channels required for publishers")
        #expect(v.problems(["role": "admin"], ["$ref": "#/components/schemas/KeyCreate"]).isEmpty)
        #expect(v.problems(["mode": nil, "id": "a", "bundle_id": "b"], ["$ref": "#/components/schemas/ChannelCreate"]).isEmpty)
    }

    @Test func everyServerRouteIsInTheSpecWithTheSameMethods() throws {
        let routes = try OpenAPISpec.readRoutes()
        var labels = Set<String>()
        for r in Route.everyCase {
            labels.insert(r.label)
            let documented = try #require(routes[r.label], "\(r.label) is routed by the server but not in docs/openapi.yaml")
            #expect(Set(r.methods) == Set(documented.keys), "\(r.label)")
            // The router maps a concrete path of the template back to this route.
            #expect(Route(rawPath: Self.sample(r.label))?.label == r.label)
        }
        #expect(labels == Set(routes.keys), "every documented path is a server route")
    }

    @Test func everyDocumentedOperationIsRoutedAndOthersAre405WithAllow() throws {
        let fx = try Live.api()
        let routes = try OpenAPISpec.readRoutes()
        for (template, ops) in routes {
            let path = Self.sample(template)
            for method in ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"] {
                let r = try fx.client.send(method, path)
                if ops[method] != nil {
                    #expect(r.status != 404 && r.status != 405, "\(method) \(template) is routed")
                    #expect(r.status == (template.hasPrefix("/v1/") ? 401 : 200), "\(method) \(template) without a key")
                } else {
                    #expect(r.status == 405, "\(method) \(template)")
                    let allow = Set((r.header("allow") ?? "").components(separatedBy: ", "))
                    #expect(allow == Set(ops.keys), "Allow of \(template)")
                }
            }
        }
    }

    @Test(.enabled(if: OpenAPISpec.hasDocument, Comment(rawValue: pyYAMLMissing)))
    func xHeraldRoleIsWhatTheServerEnforces() throws {
        let fx = try Live.api()
        let doc = try OpenAPISpec.document.get()
        let channel = unique("oas-roles")
        try fx.createChannel(channel)
        let keys = [
            "publisher": try fx.createKey("publisher", [channel]).secret, "subscriber": try fx.createKey("subscriber", [channel]).secret,
        ]
        for (template, item) in doc["paths"]?.objectValue ?? [:] {
            for (m, op) in item.objectValue ?? [:] where OpenAPISpec.methods.contains(m) {
                let role = try #require(op["x-herald-role"]?.stringValue, "\(m) \(template) has x-herald-role")
                #expect((op["security"] == .array([])) == (role == "none"), "\(m) \(template): security matches the role")
                guard role != "none" else { continue }
                for (keyRole, secret) in keys {
                    // A victim key to revoke, so a DELETE that passes does no harm elsewhere.
                    let path = Self.sample(template, channel: channel, key: "key_nothing")
                    let r = try fx.client.send(m.uppercased(), path, token: secret)
                    if keyRole == role {
                        #expect(r.status != 403 && r.status != 401, "\(m) \(template) by a \(keyRole) key: \(r.status)")
                    } else {
                        #expect(r.status == 403, "\(m) \(template) by a \(keyRole) key: \(r.status)")
                    }
                }
            }
        }
    }

    // MARK: - scenarios

    struct Call {
        var method: String
        var path: String
        var key: String?
        var json: JSON?
        var raw: String?
        var contentType: String? = "application/json"
        var headers: [(String, String)] = []
        var expect: Int
        var code: String?
    }

    /// What the scenarios exercised: template → method → statuses.
    final class Ledger: @unchecked Sendable {
        // @unchecked: used by one test on one thread.
        var seen: OpenAPISpec.Routes = [:]
    }

    func run(_ fx: APIFixture, _ calls: [Call], _ routes: OpenAPISpec.Routes, _ ledger: Ledger) throws {
        let doc = try? OpenAPISpec.document.get()
        for c in calls {
            let label = "\(c.method) \(c.path.prefix(90))"
            let r: APIResponse
            if let raw = c.raw {
                r = try fx.client.send(
                    c.method, c.path, token: c.key, body: Array(raw.utf8), contentType: c.contentType, headers: c.headers)
            } else {
                r = try fx.client.send(c.method, c.path, token: c.key, json: c.json, headers: c.headers)
            }
            #expect(r.status == c.expect, "\(label): \(r.status) \(r.text.prefix(200))")
            if let code = c.code { #expect(r.errorCode == code, "\(label)") }
            let bare = String(c.path.split(separator: "?", maxSplits: 1)[0])
            let template = try #require(OpenAPISpec.template(for: bare, in: routes.keys), "\(label) matches a documented path")
            let documented = routes[template]?[c.method] ?? []
            #expect(documented.contains(r.status), "\(label): \(r.status) is not documented for \(c.method) \(template)")
            ledger.seen[template, default: [:]][c.method, default: []].insert(r.status)
            if let doc { check(r, c, doc, template, label) }
        }
    }

    /// Body shape, content type, required headers, and the request body against the spec.
    func check(_ r: APIResponse, _ c: Call, _ doc: JSON, _ template: String, _ label: String) {
        guard let op = OpenAPISpec.operation(doc, template, c.method),
            let resp = op["responses"]?[String(r.status)].map({ OpenAPISpec.resolve(doc, $0) })
        else { return }
        for (name, h) in resp["headers"]?.objectValue ?? [:] where OpenAPISpec.resolve(doc, h)["required"] == true {
            #expect(r.header(name) != nil, "\(label): header \(name) is documented as always sent")
        }
        let validator = SchemaValidator(doc: doc, closed: true)
        if let content = resp["content"]?.objectValue, c.method != "HEAD" {
            let ct = (r.header("content-type") ?? "").split(separator: ";").first.map(String.init) ?? ""
            #expect(content[ct] != nil, "\(label): content type \(ct) is documented")
            if ct == "application/json", let schema = content[ct]?["schema"] {
                let body = r.json ?? .null
                let problems = validator.problems(body, schema)
                #expect(problems.isEmpty, "\(label) \(r.status): \(problems.prefix(5).joined(separator: "; ")) — \(r.text.prefix(300))")
            }
        } else if c.method != "HEAD" {
            #expect(r.body.isEmpty, "\(label): no body is documented")
        }
        // What the server accepts, the spec accepts; an unknown field it refuses, the spec refuses.
        let judged = (200..<300).contains(r.status) || r.errorCode == "unknown_field"
        let requestBody = judged ? c.json ?? c.raw.flatMap { try? JSON.parse($0) } : nil
        if let body = requestBody, let schema = op["requestBody"]?["content"]?["application/json"]?["schema"] {
            let problems = SchemaValidator(doc: doc, closed: false).problems(body, schema)
            if (200..<300).contains(r.status) {
                #expect(problems.isEmpty, "\(label): accepted, but the spec refuses it: \(problems.prefix(3))")
            }
            if r.errorCode == "unknown_field" {
                #expect(!problems.isEmpty, "\(label): refused as unknown_field, but the spec accepts it")
            }
        }
    }

    @Test func scenariosGetDocumentedStatusesWithDocumentedShapes() throws {
        let fx = try Live.api()
        let routes = try OpenAPISpec.readRoutes()
        let ledger = Ledger()
        let admin = fx.adminToken
        let ch = unique("oas")
        let closed = unique("oas-closed")
        let doomed = unique("oas-doomed")
        try fx.createChannel(ch)
        try fx.createChannel(closed)
        try fx.createChannel(doomed)
        #expect(try fx.admin("DELETE", "/v1/channels/\(closed)").status == 200)
        let pub = try fx.createKey("publisher", [ch, closed]).secret
        let sub = try fx.createKey("subscriber", [ch, closed]).secret
        let victim = try fx.createKey("publisher", ["x"]).id
        let event = try #require(try fx.publish(ch, update()).json?["event_id"]?.stringValue)
        let t1 = freshToken()
        let ghost = unique("oas-ghost")
        let big = String(repeating: "x", count: 5000)
        let tooMany =
            #"{"unsubscribe":["# + Array(repeating: "\"\(String(repeating: "ab", count: 32))\"", count: 100_001).joined(separator: ",")
            + "]}"

        var calls: [Call] = []
        for p in ["/healthz", "/readyz", "/metrics"] {
            calls += [Call(method: "GET", path: p, expect: 200), Call(method: "HEAD", path: p, expect: 200)]
        }
        calls += [
            Call(method: "GET", path: "/v1/channels", key: admin, expect: 200),
            Call(method: "GET", path: "/v1/channels", expect: 401, code: "unauthorized"),
            Call(method: "GET", path: "/v1/channels", key: pub, expect: 403, code: "forbidden"),
            Call(
                method: "POST", path: "/v1/channels", key: admin, json: ["id": .string(unique("oas-new")), "bundle_id": "com.example.app"],
                expect: 201),
            Call(
                method: "POST", path: "/v1/channels", key: admin,
                json: [
                    "id": .string(unique("oas-b")), "bundle_id": "com.example.app", "mode": "broadcast", "environment": "sandbox",
                    "storage_policy": "most-recent",
                ],
                expect: 201),
            Call(
                method: "POST", path: "/v1/channels", key: admin, json: ["id": .string(ch), "bundle_id": "com.example.app"], expect: 409,
                code: "channel_exists"),
            Call(method: "POST", path: "/v1/channels", key: admin, raw: "{", expect: 400, code: "invalid_json"),
            Call(method: "POST", path: "/v1/channels", json: ["id": "x", "bundle_id": "com.example.app"], expect: 401),
            Call(method: "POST", path: "/v1/channels", key: sub, json: ["id": "x", "bundle_id": "com.example.app"], expect: 403),
            Call(method: "POST", path: "/v1/channels", key: admin, raw: #"{"id":"x"}"#, contentType: "text/plain", expect: 415),
            Call(method: "POST", path: "/v1/channels", key: admin, json: ["id": "x"], expect: 422, code: "missing_field"),
            Call(
                method: "POST", path: "/v1/channels", key: admin, json: ["id": "x", "bundle_id": "com.example.app", "region": "eu"],
                expect: 422, code: "unknown_field"),
            Call(method: "GET", path: "/v1/channels/\(ch)", key: admin, expect: 200),
            Call(method: "GET", path: "/v1/channels/\(ch)", expect: 401),
            Call(method: "GET", path: "/v1/channels/\(ch)", key: pub, expect: 403),
            Call(method: "GET", path: "/v1/channels/\(ghost)", key: admin, expect: 404, code: "not_found"),
            Call(method: "DELETE", path: "/v1/channels/\(doomed)", expect: 401),
            Call(method: "DELETE", path: "/v1/channels/\(doomed)", key: pub, expect: 403),
            Call(method: "DELETE", path: "/v1/channels/\(doomed)", key: admin, expect: 200),
            Call(method: "DELETE", path: "/v1/channels/\(ghost)", key: admin, expect: 404),
            Call(method: "GET", path: "/v1/keys", key: admin, expect: 200),
            Call(method: "GET", path: "/v1/keys", expect: 401),
            Call(method: "GET", path: "/v1/keys", key: sub, expect: 403),
            Call(
                method: "POST", path: "/v1/keys", key: admin,
                json: ["role": "subscriber", "channels": ["match-*"], "label": "app backend"], expect: 201),
            Call(method: "POST", path: "/v1/keys", key: admin, raw: "[", expect: 400),
            Call(method: "POST", path: "/v1/keys", json: ["role": "admin"], expect: 401),
            Call(method: "POST", path: "/v1/keys", key: pub, json: ["role": "admin"], expect: 403),
            Call(
                method: "POST", path: "/v1/keys", key: admin, raw: "role=admin", contentType: "application/x-www-form-urlencoded",
                expect: 415),
            Call(
                method: "POST", path: "/v1/keys", key: admin, json: ["role": "publisher", "channels": ["a"], "scope": "all"], expect: 422,
                code: "unknown_field"),
            Call(method: "DELETE", path: "/v1/keys/\(victim)", expect: 401),
            Call(method: "DELETE", path: "/v1/keys/\(victim)", key: sub, expect: 403),
            Call(method: "DELETE", path: "/v1/keys/\(victim)", key: admin, expect: 200),
            Call(method: "DELETE", path: "/v1/keys/key_nothing", key: admin, expect: 404),

            Call(
                method: "PUT", path: "/v1/channels/\(ch)/subscriptions/\(t1)", key: sub,
                json: ["kind": "activity", "expires_at": .int(nowSeconds() + 3600)], expect: 201),
            Call(method: "PUT", path: "/v1/channels/\(ch)/subscriptions/\(t1)", key: sub, expect: 200),
            Call(
                method: "PUT", path: "/v1/channels/\(ch)/subscriptions/\(freshToken())", key: sub, json: ["replaces": .string(t1)],
                expect: 201),
            Call(method: "PUT", path: "/v1/channels/\(ch)/subscriptions/\(t1)", key: sub, raw: "{", expect: 400),
            Call(method: "PUT", path: "/v1/channels/\(ch)/subscriptions/\(t1)", expect: 401),
            Call(method: "PUT", path: "/v1/channels/\(ch)/subscriptions/\(t1)", key: pub, expect: 403),
            Call(method: "PUT", path: "/v1/channels/\(ghost)/subscriptions/\(t1)", key: admin, expect: 404),
            Call(method: "PUT", path: "/v1/channels/\(closed)/subscriptions/\(t1)", key: sub, expect: 409, code: "channel_closed"),
            Call(
                method: "PUT", path: "/v1/channels/\(ch)/subscriptions/\(t1)", key: sub, raw: "kind=activity",
                contentType: "application/x-www-form-urlencoded", expect: 415),
            Call(method: "PUT", path: "/v1/channels/\(ch)/subscriptions/beef", key: sub, expect: 422, code: "invalid_token"),
            Call(
                method: "PUT", path: "/v1/channels/\(ch)/subscriptions/\(t1)", key: sub, json: ["kind": "activity", "colour": "red"],
                expect: 422, code: "unknown_field"),
            Call(method: "DELETE", path: "/v1/channels/\(ch)/subscriptions/\(t1)", expect: 401),
            Call(method: "DELETE", path: "/v1/channels/\(ch)/subscriptions/\(t1)", key: pub, expect: 403),
            Call(method: "DELETE", path: "/v1/channels/\(ch)/subscriptions/\(t1)", key: sub, expect: 404),  // replaced above
            Call(method: "DELETE", path: "/v1/channels/\(ch)/subscriptions/beef", key: sub, expect: 422),
        ]
        let t2 = freshToken()
        calls += [
            Call(method: "PUT", path: "/v1/channels/\(ch)/subscriptions/\(t2)", key: sub, json: ["kind": "push-to-start"], expect: 201),
            Call(method: "DELETE", path: "/v1/channels/\(ch)/subscriptions/\(t2)", key: sub, expect: 204),
            Call(
                method: "POST", path: "/v1/channels/\(ch)/subscriptions:batch", key: sub,
                json: [
                    "subscribe": [
                        .string(freshToken()),
                        ["token": .string(freshToken()), "kind": "push-to-start", "expires_at": .int(nowSeconds() + 60)],
                    ],
                    "unsubscribe": [.string(t2)],
                ],
                expect: 200),
            Call(method: "POST", path: "/v1/channels/\(ch)/subscriptions:batch", key: sub, raw: "{", expect: 400),
            Call(method: "POST", path: "/v1/channels/\(ch)/subscriptions:batch", json: ["subscribe": []], expect: 401),
            Call(method: "POST", path: "/v1/channels/\(ch)/subscriptions:batch", key: pub, json: ["subscribe": []], expect: 403),
            Call(method: "POST", path: "/v1/channels/\(ghost)/subscriptions:batch", key: admin, json: ["subscribe": []], expect: 404),
            Call(method: "POST", path: "/v1/channels/\(closed)/subscriptions:batch", key: sub, json: ["subscribe": []], expect: 409),
            Call(
                method: "POST", path: "/v1/channels/\(ch)/subscriptions:batch", key: sub, raw: tooMany, expect: 413,
                code: "request_too_large"),
            Call(
                method: "POST", path: "/v1/channels/\(ch)/subscriptions:batch", key: sub, raw: "{}", contentType: "text/plain", expect: 415),
            Call(
                method: "POST", path: "/v1/channels/\(ch)/subscriptions:batch", key: sub, json: ["subscribe": ["beef"]], expect: 422,
                code: "invalid_token"),
            Call(
                method: "POST", path: "/v1/channels/\(ch)/subscriptions:batch", key: sub, json: ["subscribe": [], "remove": []],
                expect: 422, code: "unknown_field"),

            Call(
                method: "POST", path: "/v1/channels/\(ch)/events", key: pub, json: update(["s": 1]),
                headers: [("Idempotency-Key", "oas-1")], expect: 202),
            Call(
                method: "POST", path: "/v1/channels/\(ch)/events", key: pub, json: update(["s": 1]),
                headers: [("Idempotency-Key", "oas-1")], expect: 200),
            Call(method: "POST", path: "/v1/channels/\(ch)/events?dry_run=true", key: pub, json: update(["s": 2]), expect: 200),
            Call(method: "POST", path: "/v1/channels/\(ch)/events", key: pub, json: start(), expect: 202),
            Call(
                method: "POST", path: "/v1/channels/\(ch)/events", key: pub,
                json: [
                    "aps": ["event": "end", "content-state": ["s": 3], "dismissal-date": .int(nowSeconds() + 3600)], "priority": 10,
                    "expiration": 0,
                ],
                expect: 202),
            Call(method: "POST", path: "/v1/channels/\(ch)/events", key: pub, json: update(), expect: 409, code: "activity_ended"),
            Call(
                method: "POST", path: "/v1/channels/\(ch)/events", key: pub, json: start(timestamp: 1), expect: 409, code: "stale_timestamp"
            ),
            Call(method: "POST", path: "/v1/channels/\(closed)/events", key: pub, json: update(), expect: 409, code: "channel_closed"),
            Call(method: "POST", path: "/v1/channels/\(ch)/events", key: pub, raw: "", expect: 400, code: "invalid_body"),
            Call(
                method: "POST", path: "/v1/channels/\(ch)/events", key: pub, json: update(), headers: [("Idempotency-Key", "")],
                expect: 400, code: "invalid_field"),
            Call(
                method: "POST", path: "/v1/channels/\(ch)/events?dry_run=on", key: pub, json: update(), expect: 400, code: "invalid_field"),
            Call(method: "POST", path: "/v1/channels/\(ch)/events", json: update(), expect: 401),
            Call(method: "POST", path: "/v1/channels/\(ch)/events", key: sub, json: update(), expect: 403),
            Call(method: "POST", path: "/v1/channels/\(ghost)/events", key: admin, json: update(), expect: 404),
            Call(
                method: "POST", path: "/v1/channels/\(ch)/events", key: pub, json: start(["x": .string(big)]), expect: 413,
                code: "payload_too_large"),
            Call(method: "POST", path: "/v1/channels/\(ch)/events", key: pub, raw: update().text, contentType: "text/plain", expect: 415),
            Call(
                method: "POST", path: "/v1/channels/\(ch)/events", key: pub, json: ["aps": ["content-state": [:]]], expect: 422,
                code: "missing_field"),
            Call(
                method: "POST", path: "/v1/channels/\(ch)/events", key: pub,
                json: ["aps": ["event": "start", "content-state": [:]], "topic": "x"], expect: 422, code: "unknown_field"),
            Call(method: "GET", path: "/v1/channels/\(ch)/events/\(event)", key: pub, expect: 200),
            Call(method: "GET", path: "/v1/channels/\(ch)/events/\(event)", expect: 401),
            Call(method: "GET", path: "/v1/channels/\(ch)/events/\(event)", key: sub, expect: 403),
            Call(method: "GET", path: "/v1/channels/\(ch)/events/evt_nothing", key: pub, expect: 404),

            // Read-only (no `apply`): nothing is deleted under the other tests.
            Call(method: "POST", path: "/v1/channels:reconcile", key: admin, json: ["apply": false], expect: 200),
            Call(method: "POST", path: "/v1/channels:reconcile", key: admin, raw: "{", expect: 400, code: "invalid_json"),
            Call(method: "POST", path: "/v1/channels:reconcile", json: [:], expect: 401),
            Call(method: "POST", path: "/v1/channels:reconcile", key: pub, json: [:], expect: 403),
            Call(method: "POST", path: "/v1/channels:reconcile", key: admin, raw: "{}", contentType: "text/plain", expect: 415),
            Call(method: "POST", path: "/v1/channels:reconcile", key: admin, json: ["apply": 1], expect: 422, code: "invalid_field"),
        ]
        try run(fx, calls, routes, ledger)
        // A finished event has every timestamp set: its shape too.
        _ = try fx.waitFinished(ch, event)
        try run(fx, [Call(method: "GET", path: "/v1/channels/\(ch)/events/\(event)", key: pub, expect: 200)], routes, ledger)

        // 503s, from a server without APNs channel management whose database then closes.
        let degraded = try APIFixture { p in
            var c = APIConfig()
            c.adminToken = Redacted(p.adminToken)
            return APIServer(
                config: c, store: p.store, engine: p.engine, channelManagers: { _ in nil }, metrics: p.metrics, logger: .discard)
        }
        try run(
            degraded,
            [
                Call(
                    method: "POST", path: "/v1/channels", key: degraded.adminToken,
                    json: ["id": "b", "bundle_id": "com.example.app", "mode": "hybrid"], expect: 503)
            ],
            routes, ledger)
        degraded.fanout.closeStorage()
        try run(
            degraded, [Call(method: "GET", path: "/readyz", expect: 503), Call(method: "HEAD", path: "/readyz", expect: 503)],
            routes, ledger)
        try run(
            degraded,
            [
                Call(method: "GET", path: "/v1/channels", key: degraded.adminToken, expect: 503),
                Call(method: "GET", path: "/v1/keys", key: degraded.adminToken, expect: 503),
            ],
            routes, ledger)

        // Every documented status was met, except 503 where the server had no reason to give it.
        for (template, ops) in routes {
            for (method, documented) in ops {
                let missing = documented.subtracting(ledger.seen[template]?[method] ?? []).subtracting([503])
                #expect(missing.isEmpty, "\(method) \(template): documented but not exercised: \(missing.sorted())")
            }
        }
    }
}
