import Foundation
import HeraldCore
import HeraldCrypto
import Testing

@testable import HeraldSimulator

/// Channels planted and deleted behind the client's back, and the team rules, through the
/// control port and the simulator's values.
@Suite struct SimulatorChannelControlTests {
    @Test func channelsArePlantedListedAndDeletedThroughTheControlPort() throws {
        let fx = try ControlFixture()
        let r = try fx.call("POST", "/channels", body: #"{"bundle_id":"com.example.app","count":3,"storage_policy":1}"#)
        #expect(r.status == 201)
        let ids = r.json?["channels"]?.arrayValue?.compactMap { $0.stringValue } ?? []
        #expect(ids.count == 3)
        #expect(fx.sim.channels(bundleID: "com.example.app") == ids.sorted())
        #expect(fx.sim.channels().values.allSatisfy { $0 == 1 })
        let encoded = ids[0].addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ids[0]
        #expect(try fx.call("DELETE", "/channels/\(encoded)").status == 204)
        #expect(try fx.call("DELETE", "/channels/\(encoded)").status == 404)
        #expect(fx.sim.channels(bundleID: "com.example.app").count == 2)
        #expect(try fx.call("POST", "/channels", body: #"{"count":1}"#).status == 400)
        #expect(try fx.call("POST", "/channels", body: #"{"bundle_id":"b","count":0}"#).status == 422)
        #expect(try fx.call("POST", "/channels", body: #"{"bundle_id":"b","storage_policy":2}"#).status == 422)
        #expect(try fx.call("PUT", "/channels").status == 405)
        #expect(try fx.call("GET", "/teams").json?["mismatches"] == 0)
    }

    @Test func plantingStopsAtTheCap() throws {
        let fx = try ControlFixture { $0.maxChannelsPerBundle = 5 }
        #expect(fx.sim.plantChannels(bundleID: "b", count: 5)?.count == 5)
        #expect(fx.sim.plantChannels(bundleID: "b", count: 1) == nil)
        #expect(try fx.call("POST", "/channels", body: #"{"bundle_id":"b"}"#).status == 422)
    }

    @Test func theOwnTeamOwnsEveryBundleNoOtherTeamLists() throws {
        let key = try P256PrivateKey.generate()
        var c = SimulatorConfig(certificateFile: "", privateKeyFile: "", teamID: "TEAMA", keyID: "KEYA", publicKey: key.publicKey)
        #expect(c.covers(teamID: "TEAMA", bundle: "com.anything"))
        #expect(!c.covers(teamID: "TEAMB", bundle: "com.anything"))
        c.otherTeams = [SimulatorTeam(teamID: "TEAMB", keyID: "KEYB", publicKey: key.publicKey, bundleIDs: ["com.b"])]
        #expect(c.covers(teamID: "TEAMB", bundle: "com.b"))
        #expect(!c.covers(teamID: "TEAMB", bundle: "com.a"))
        #expect(!c.covers(teamID: "TEAMA", bundle: "com.b"))
        #expect(c.covers(teamID: "TEAMA", bundle: "com.a"))
        #expect(c.signer(keyID: "KEYB", teamID: "TEAMB") != nil)
        #expect(c.signer(keyID: "KEYB", teamID: "TEAMA") == nil)
        #expect(c.signer(keyID: "KEYA", teamID: "TEAMA") != nil)
    }
}
