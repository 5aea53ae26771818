import Foundation
import HeraldCore
import HeraldSimulator
import HeraldTestSupport
import Testing

/// A simulator in this process and the built `herald serve` as a child process talking to
/// it: what every fault test starts from. `restart()` replaces the child (after `kill()`)
/// on the same database.
final class ServedHerald: @unchecked Sendable {
    // @unchecked: `serve` is replaced only by the test's own thread (restart), never while
    // other threads use it.
    let sim: SimFixture
    let db: String
    var serve: ServeProcess

    init(db: String? = nil, extraEnv: [String: String] = [:], simulator: (inout SimulatorConfig) -> Void = { _ in }) throws {
        sim = try SimFixture(configure: simulator)
        self.db = db ?? sim.dir + "/herald.db"
        serve = try ServeProcess(db: self.db, sim: sim, extraEnv: extraEnv)
    }

    /// Starts a new child on the same database (the old one must be dead or stopped).
    func restart(extraEnv: [String: String] = [:]) throws {
        serve = try ServeProcess(db: db, sim: sim, extraEnv: extraEnv)
    }

    /// Creates a fanout channel (201 expected).
    func channel(_ id: String) throws {
        let r = try serve.send("POST", "/v1/channels", json: ["id": .string(id), "bundle_id": "com.example.app", "environment": "sandbox"])
        #expect(r.status == 201, "create \(id): \(r.status) \(r.text)")
    }

    /// Registers `tokens` (hex) as `kind` subscriptions, 10 000 per request.
    func subscribe(_ channel: String, _ tokens: [String], kind: String = "activity") throws {
        for chunk in stride(from: 0, to: tokens.count, by: 10_000) {
            let entries = tokens[chunk..<min(chunk + 10_000, tokens.count)].map { t -> JSON in
                kind == "activity" ? .string(t) : .object(["token": .string(t), "kind": .string(kind)])
            }
            let r = try serve.send("POST", "/v1/channels/\(channel)/subscriptions:batch", json: ["subscribe": .array(entries)])
            #expect(r.status == 200, "subscribe on \(channel): \(r.status) \(r.text)")
        }
    }

    /// Publishes `aps` and returns the answer.
    func publish(_ channel: String, _ aps: JSON, priority: Int? = nil) throws -> APIResponse {
        var body: [String: JSON] = ["aps": aps]
        if let priority { body["priority"] = .int(Int64(priority)) }
        return try serve.send("POST", "/v1/channels/\(channel)/events", json: .object(body))
    }

    /// Publishes and requires a 202; returns the event id.
    func publishAccepted(_ channel: String, _ aps: JSON) throws -> String {
        let r = try publish(channel, aps)
        #expect(r.status == 202, "publish on \(channel): \(r.status) \(r.text)")
        return try #require(r.json?["event_id"]?.stringValue)
    }

    /// Subscriber counts of a channel as the API reports them.
    func subscriberCount(_ channel: String) throws -> Int64 {
        try #require(try serve.send("GET", "/v1/channels/\(channel)").json?["subscribers"]?["total"]?.intValue)
    }
}

/// An update's `aps` with a score.
func update(_ home: Int, _ away: Int = 0) -> JSON {
    ["event": "update", "content-state": ["home": .int(Int64(home)), "away": .int(Int64(away))]]
}

/// Faults built in one expression.
func faults(_ configure: (inout SimulatorFaults) -> Void) -> SimulatorFaults {
    var f = SimulatorFaults()
    configure(&f)
    return f
}
