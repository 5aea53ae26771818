import Foundation
import HeraldAPI
import HeraldCore
import HeraldCrypto
import HeraldPostgresStore
import HeraldSimulator
import HeraldTestSupport
import HeraldWebhooks
import Testing

extension APIFixture {
    /// A fixture serving the real `APIServer` (the production handler, default settings),
    /// on `storage` (default: `testStorage`).
    static func start(storage: StorageFactory? = testStorage) throws -> APIFixture {
        try APIFixture(storage: storage) { p in
            var c = APIConfig()
            c.adminToken = Redacted(p.adminToken)
            // Webhooks answer on the routes; nothing is dispatched (`WebhookDeliveryTests` start a hub).
            let hub = WebhookHub(
                store: p.storage, box: try SecretBox(key: SecureRandom.bytes(32)), metrics: p.metrics, logger: .discard)
            return APIServer(
                config: c, store: p.storage, engine: p.engine, channelManagers: p.channelManagers, metrics: p.metrics,
                logger: .discard, webhooks: hub)
        }
    }
}

/// PostgreSQL: a new database in the process's throwaway cluster per fixture.
let postgresStorage = StorageFactory(name: "postgres") { _, clock in
    let store = try PostgresStore(url: try PostgresCluster.shared().makeDatabase("api"), clock: clock, connections: 6)
    return OpenedStorage(storage: store, close: { store.close() })
}

/// The storage the live API suites run on: SQLite (nil: the fixture's own `Store`), or
/// PostgreSQL with `HERALD_TEST_STORAGE=postgres` (the same suites, unchanged).
let testStorage: StorageFactory? =
    ProcessInfo.processInfo.environment["HERALD_TEST_STORAGE"] == "postgres" ? postgresStorage : nil

/// One live API server per suite: `@Suite(.liveAPI)` starts it before the suite's first
/// test and stops it after its last; tests reach it with `try Live.api()`. Tests of a suite
/// share it, so each uses its own channel ids (`unique(_:)`).
struct LiveAPITrait: SuiteTrait, TestScoping {
    var isRecursive: Bool { false }

    func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        let fixture = try APIFixture.start()
        try await Live.$fixture.withValue(fixture) { try await function() }
    }
}

extension Trait where Self == LiveAPITrait {
    /// Runs the suite against one live API server.
    static var liveAPI: LiveAPITrait { LiveAPITrait() }
}

enum Live {
    @TaskLocal static var fixture: APIFixture?

    /// The suite's server. Throws when the suite lacks `.liveAPI`.
    static func api() throws -> APIFixture {
        try #require(fixture, "this suite needs @Suite(.liveAPI)")
    }
}

/// A channel id no other test uses.
func unique(_ prefix: String) -> String {
    prefix + "-" + UUID().uuidString.prefix(8).lowercased()
}

/// A hex push token (32 bytes) no other test uses.
func freshToken() -> String {
    (UUID().uuidString + UUID().uuidString).replacingOccurrences(of: "-", with: "").lowercased()
}

/// A path segment percent-encoded like the CLI does.
func segment(_ s: String) -> String {
    var allowed = CharacterSet.alphanumerics
    allowed.insert(charactersIn: "-._~")
    return s.addingPercentEncoding(withAllowedCharacters: allowed) ?? s
}

extension APIFixture {
    /// Creates a channel as admin; `#require`s 201 and returns the channel.
    @discardableResult
    func createChannel(
        _ id: String, mode: String = "fanout", storage: String? = nil, bundle: String = "com.example.app",
        environment: String = "sandbox"
    ) throws -> JSON {
        var body: [String: JSON] = [
            "id": .string(id), "bundle_id": .string(bundle), "mode": .string(mode), "environment": .string(environment),
        ]
        if let storage { body["storage_policy"] = .string(storage) }
        let r = try admin("POST", "/v1/channels", json: .object(body))
        try #require(r.status == 201, "create channel \(id): \(r.status) \(r.text)")
        return try #require(r.json)
    }

    /// Creates a key as admin; returns its id and secret.
    func createKey(_ role: String, _ channels: [String], label: String? = nil) throws -> (id: String, secret: String) {
        var body: [String: JSON] = ["role": .string(role), "channels": .array(channels.map(JSON.string))]
        if let label { body["label"] = .string(label) }
        let r = try admin("POST", "/v1/keys", json: .object(body))
        try #require(r.status == 201, "create key: \(r.status) \(r.text)")
        let id = try #require(r.json?["id"]?.stringValue)
        let secret = try #require(r.json?["secret"]?.stringValue)
        return (id, secret)
    }

    /// `PUT /v1/channels/{channel}/subscriptions/{token}` with `token` (default admin).
    @discardableResult
    func subscribe(_ channel: String, _ tokenHex: String, body: JSON? = nil, key: String? = nil) throws -> APIResponse {
        try client.send(
            "PUT", "/v1/channels/\(segment(channel))/subscriptions/\(tokenHex)", token: key ?? adminToken, json: body)
    }

    /// `POST /v1/channels/{channel}/events` with `key` (default admin).
    @discardableResult
    func publish(
        _ channel: String, _ body: JSON, key: String? = nil, query: String = "", headers: [(String, String)] = []
    ) throws -> APIResponse {
        try client.send(
            "POST", "/v1/channels/\(segment(channel))/events\(query)", token: key ?? adminToken, json: body, headers: headers)
    }

    /// Polls `GET /v1/channels/{channel}/events/{id}` until its state is final (or 30 s).
    func waitFinished(_ channel: String, _ eventID: String) throws -> JSON {
        let deadline = Date(timeIntervalSinceNow: 30)
        while true {
            let r = try admin("GET", "/v1/channels/\(segment(channel))/events/\(eventID)")
            try #require(r.status == 200, "progress: \(r.status) \(r.text)")
            let state = r.json?["state"]?.stringValue ?? ""
            if ["done", "superseded", "failed"].contains(state) || Date() > deadline { return try #require(r.json) }
            usleep(10_000)
        }
    }

    /// The simulator's broadcast channels (APNs channel id → storage policy).
    var simulatorChannels: [String: Int] { sim.sim.channels() }
}

/// An `update` publish body.
func update(_ state: JSON = ["score": 1], timestamp: Int64? = nil, extra: [String: JSON] = [:]) -> JSON {
    var aps: [String: JSON] = ["event": "update", "content-state": state]
    if let timestamp { aps["timestamp"] = .int(timestamp) }
    for (k, v) in extra { aps[k] = v }
    return ["aps": .object(aps)]
}

/// A `start` publish body (attributes, alert: what `start` requires).
func start(_ state: JSON = ["score": 0], timestamp: Int64? = nil) -> JSON {
    var aps: [String: JSON] = [
        "event": "start", "content-state": state, "attributes-type": "MatchAttributes", "attributes": ["matchID": "final"],
        "alert": ["title": "Kick-off", "body": "Follow it live"],
    ]
    if let timestamp { aps["timestamp"] = .int(timestamp) }
    return ["aps": .object(aps)]
}

/// An `end` publish body.
func end(_ state: JSON = ["score": 9], timestamp: Int64? = nil) -> JSON {
    var aps: [String: JSON] = ["event": "end", "content-state": state]
    if let timestamp { aps["timestamp"] = .int(timestamp) }
    return ["aps": .object(aps)]
}

/// Now in unix seconds.
func nowSeconds() -> Int64 { Int64(Date().timeIntervalSince1970) }
