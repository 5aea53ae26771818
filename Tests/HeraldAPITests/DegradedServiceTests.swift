import Foundation
import HeraldAPI
import HeraldCore
import HeraldSimulator
import HeraldTestSupport
import Testing

/// 503s: each test breaks something, so each has its own server.
@Suite struct DegradedServiceTests {
    @Test func broadcastWithoutChannelManagementIs503WithRetryAfter() throws {
        let fx = try APIFixture { p in
            var c = APIConfig()
            c.adminToken = Redacted(p.adminToken)
            return APIServer(
                config: c, store: p.store, engine: p.engine, channelManagers: { _ in nil }, metrics: p.metrics, logger: .discard)
        }
        let r = try fx.admin("POST", "/v1/channels", json: ["id": "b", "bundle_id": "com.example.app", "mode": "broadcast"])
        #expect(r.status == 503)
        #expect(r.errorCode == "unavailable")
        #expect(Int(r.header("retry-after") ?? "") != nil)
        #expect(try fx.admin("GET", "/v1/channels/b").status == 404, "no channel half-made")
        // Fanout channels need no APNs channel.
        #expect(try fx.admin("POST", "/v1/channels", json: ["id": "f", "bundle_id": "com.example.app"]).status == 201)
    }

    @Test func apnsFailingToCreateTheChannelIs503WithRetryAfterAndNothingStored() throws {
        let fx = try APIFixture.start()
        var faults = SimulatorFaults()
        faults.errorRates = [500: 1]
        fx.sim.sim.setFaults(faults)
        let r = try fx.admin("POST", "/v1/channels", json: ["id": "h", "bundle_id": "com.example.app", "mode": "hybrid"])
        #expect(r.status == 503)
        #expect(r.errorCode == "unavailable")
        #expect(Int(r.header("retry-after") ?? "") != nil)
        #expect(try fx.admin("GET", "/v1/channels/h").status == 404)
        fx.sim.sim.setFaults(SimulatorFaults())
        #expect(try fx.admin("POST", "/v1/channels", json: ["id": "h", "bundle_id": "com.example.app", "mode": "hybrid"]).status == 201)
    }

    @Test func apnsRefusingToCreateTheChannelIs422ApnsRejected() throws {
        let fx = try APIFixture.start()
        var faults = SimulatorFaults()
        faults.errorRates = [400: 1]
        fx.sim.sim.setFaults(faults)
        let r = try fx.admin("POST", "/v1/channels", json: ["id": "b", "bundle_id": "com.example.app", "mode": "broadcast"])
        #expect(r.status == 422)
        #expect(r.errorCode == "apns_rejected")
        #expect(try fx.admin("GET", "/v1/channels/b").status == 404)
    }

    @Test func closingSucceedsWhenAPNsCannotDeleteTheChannel() throws {
        let fx = try APIFixture.start()
        let apnsID = try #require(try fx.createChannel("h", mode: "hybrid")["apns_channel_id"]?.stringValue)
        var faults = SimulatorFaults()
        faults.errorRates = [500: 1]
        fx.sim.sim.setFaults(faults)
        let r = try fx.admin("DELETE", "/v1/channels/h")
        #expect(r.status == 200)
        #expect(r.json?["state"] == "closed")
        // The APNs channel is left behind (logged as api.apns_channel_delete_failed)...
        #expect(fx.simulatorChannels[apnsID] != nil)
        // ...and closing again retries the deletion.
        fx.sim.sim.setFaults(SimulatorFaults())
        #expect(try fx.admin("DELETE", "/v1/channels/h").status == 200)
        #expect(fx.simulatorChannels[apnsID] == nil)
    }

    @Test func readyzIs503WithRetryAfterWhenTheDatabaseIsClosed() throws {
        let fx = try APIFixture.start()
        #expect(try fx.client.send("GET", "/readyz").status == 200)
        fx.fanout.closeStorage()
        let r = try fx.client.send("GET", "/readyz")
        #expect(r.status == 503)
        #expect(r.errorCode == "unavailable")
        #expect(Int(r.header("retry-after") ?? "") != nil)
        // Liveness is not readiness.
        #expect(try fx.client.send("GET", "/healthz").status == 200)
    }
}
