import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import Testing

/// `herald migrate` and `herald serve` with `HERALD_DB=postgresql://…`: a throwaway
/// PostgreSQL of its own (the test stops and restarts it), the simulator as APNs.
@Suite(.serialized) struct PostgresServeTests {
    @Test func serveOnPostgreSQLDeliversAndReadyzFollowsTheDatabase() throws {
        let cluster = try PostgresCluster.start()
        defer { cluster.stop() }
        let url = try cluster.makeDatabase("serve")
        let sim = try SimFixture()
        let token = "hk_admin_" + String(repeating: "a", count: 40)

        var r = try herald(["migrate", "--db", url], env: [:])
        #expect(r.status == 0, "\(r.err)")
        #expect(r.out.contains("applied 1, 2, 3"), "\(r.out)")
        r = try herald(["migrate"], env: ["HERALD_DB": url])
        #expect(r.status == 0 && r.out.contains("up to date"), "\(r.out) \(r.err)")

        let serve = try ServeProcess(db: url, sim: sim, extraEnv: ["HERALD_ADMIN_TOKEN": token])
        defer { serve.stop() }
        let api = serve.client
        #expect(try api.send("GET", "/readyz").status == 200)
        #expect(
            try api.send(
                "POST", "/v1/channels", token: token, json: ["id": "final", "bundle_id": "com.example.app", "environment": "sandbox"]
            ).status == 201)
        let hex = String(repeating: "ab", count: 32)
        #expect(try api.send("PUT", "/v1/channels/final/subscriptions/\(hex)", token: token, json: [:]).status < 300)
        let published = try api.send(
            "POST", "/v1/channels/final/events", token: token,
            json: ["aps": ["event": "update", "content-state": ["score": "1-0"]]])
        #expect(published.status == 202, "\(published.text)")
        let id = try #require(published.json?["event_id"]?.stringValue)
        var final: JSON?
        _ = try Poll.until(timeout: 20, interval: 0.05) {
            final = try api.send("GET", "/v1/channels/final/events/\(id)", token: token).json
            return final.map(ServeProcess.isFinal) ?? false
        }
        #expect(final?["state"]?.stringValue == "done", "\(String(describing: final))")
        #expect(final?["sent"]?.intValue == 1 && final?["targets"]?.intValue == 1, "\(String(describing: final))")

        // The database goes away: not ready (and still alive); back: ready again.
        try cluster.stopServer()
        #expect(try api.send("GET", "/readyz").status == 503)
        #expect(try api.send("GET", "/healthz").status == 200)
        try cluster.startServer()
        #expect(try Poll.until(timeout: 15, interval: 0.1) { try api.send("GET", "/readyz").status == 200 })
        #expect(!serve.output.contains("password"))
    }

    @Test func aDatabaseNewerThanTheBinaryIsRefused() throws {
        let url = try PostgresCluster.shared().makeDatabase("newer")
        var r = try herald(["migrate", "--db", url], env: [:])
        #expect(r.status == 0, "\(r.err)")
        let c = try PostgresConnection(PostgresOptions(connection: try PostgresConnectionString(url)))
        try c.run("INSERT INTO schema_migrations (version, name) VALUES (999, 'future')")
        c.close()
        r = try herald(["migrate", "--db", url], env: [:])
        #expect(r.status == 1 && r.err.contains("newer than this herald"), "\(r.err)")
        r = try herald(["serve", "--db", url, "--listen", "127.0.0.1:0", "--admin-token", "hk_admin_x"], env: [:])
        #expect(r.status == 1 && r.err.contains("newer than this herald"), "\(r.err)")
    }
}
