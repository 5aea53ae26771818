import Foundation
import HeraldCore
import Testing

@testable import HeraldSimulator

/// The ledger side of the control interface, fed by `curl --http2` pushes (an independent
/// HTTP/2 client, as in Apple's own instructions).
@Suite struct SimulatorControlLedgerTests {
    let tokenA = String(repeating: "ab", count: 32)
    let tokenB = String(repeating: "cd", count: 32)

    @Test func curlPushesShowUpInTokensStatsAndPerTokenPushes() throws {
        let f = try ControlFixture()
        #expect(try f.pushUpdate(tokenA, timestamp: 100).status == 200)
        #expect(try f.pushUpdate(tokenA, timestamp: 101, priority: 5).status == 200)
        #expect(try f.pushUpdate(tokenB.uppercased(), timestamp: 100).status == 200)

        let tokens = try f.call("GET", "/tokens")
        #expect(tokens.status == 200)
        #expect(tokens.json == ["tokens": [tokenA: 2, tokenB: 1]])

        let a = try f.call("GET", "/tokens/\(tokenA)")
        #expect(a.json?["token"] == .string(tokenA))
        let pushes = try #require(a.json?["pushes"]?.arrayValue)
        #expect(pushes.count == 2)
        #expect(pushes[0]["priority"] == 10)
        #expect(pushes[1]["priority"] == 5)
        #expect(pushes[0]["event"] == "update")
        #expect(pushes.map { $0["timestamp"] } == [100, 101])
        #expect(pushes[0]["payload"]?["aps"]?["content-state"]?["score"] == 1)

        let stats = try f.call("GET", "/stats")
        #expect(stats.json?["accepted"] == 3)
        #expect(stats.json?["tokens"] == 2)
        #expect(stats.json?["responses"]?["200"] == 3)
    }

    @Test func unknownTokenHasNoPushes() throws {
        let f = try ControlFixture()
        let r = try f.call("GET", "/tokens/\(tokenA)")
        #expect(r.status == 200)
        #expect(r.json?["pushes"] == [])
    }

    @Test func resetForgetsWhatWasReceived() throws {
        let f = try ControlFixture()
        #expect(try f.pushUpdate(tokenA, timestamp: 1).status == 200)
        let r = try f.call("POST", "/reset")
        #expect(r.status == 200)
        #expect(try f.call("GET", "/tokens").json == ["tokens": [:]])
        #expect(try f.call("GET", "/stats").json?["accepted"] == 0)
    }

    @Test func deadTokensAnswer410WithTheGivenTimestamp() throws {
        let f = try ControlFixture()
        let r = try f.call("POST", "/dead-tokens", body: #"{"tokens":["\#(tokenA)"],"since_ms":1767225600000}"#)
        #expect(r.status == 200)
        #expect(r.json?["marked"] == 1)
        let push = try f.pushUpdate(tokenA, timestamp: 5)
        #expect(push.status == 410)
        let body = try JSON.parse(push.body)
        #expect(body["reason"] == "Unregistered")
        #expect(body["timestamp"] == 1_767_225_600_000)
        #expect(try f.pushUpdate(tokenB, timestamp: 5).status == 200)
    }

    @Test func deadTokensRefusesABodyWithoutTokens() throws {
        let f = try ControlFixture()
        let missing = try f.call("POST", "/dead-tokens", body: #"{"since_ms":1}"#)
        #expect(missing.status == 400)
        #expect(missing.json?["error"]?["code"] == "missing_field")
        let wrong = try f.call("POST", "/dead-tokens", body: #"{"tokens":[1,2]}"#)
        #expect(wrong.status == 422)
        let notJSON = try f.call("POST", "/dead-tokens", body: "{")
        #expect(notJSON.status == 400)
        #expect(notJSON.json?["error"]?["code"] == "invalid_json")
    }

    @Test func channelsAndTheirBroadcastsAreListedByPercentEncodedID() throws {
        let f = try ControlFixture()
        let bundle = "com.example.app"
        let created = try f.curl(
            "/1/apps/\(bundle)/channels", headers: [:], body: #"{"message-storage-policy":1,"push-type":"LiveActivity"}"#)
        #expect(created.status == 201)
        let id = try #require(created.headers["apns-channel-id"])

        let sent = try f.curl(
            "/4/broadcasts/apps/\(bundle)",
            headers: [
                "apns-channel-id": id, "apns-push-type": "LiveActivity", "apns-expiration": "0", "apns-priority": "10",
            ],
            body: #"{"aps":{"event":"update","timestamp":7,"content-state":{}}}"#)
        #expect(sent.status == 200)

        #expect(try f.call("GET", "/channels").json == ["channels": [id: 1]])
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        let encoded = try #require(id.addingPercentEncoding(withAllowedCharacters: allowed))
        let b = try f.call("GET", "/channels/\(encoded)/broadcasts")
        #expect(b.status == 200)
        #expect(b.json?["channel"] == .string(id))
        let list = try #require(b.json?["broadcasts"]?.arrayValue)
        #expect(list.count == 1)
        #expect(list.first?["timestamp"] == 7)

        let unknown = try f.call("GET", "/channels/AAAA/broadcasts")
        #expect(unknown.status == 404)
        #expect(unknown.json?["error"]?["code"] == "not_found")
    }
}
