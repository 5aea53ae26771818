import Foundation
import HeraldCore
import HeraldTestSupport
import Testing

/// `/v1/webhooks`: creation with the secret once, validation as JSON errors, list, delete.
@Suite(.liveAPI) struct WebhookRoutesTests {
    @Test func aWebhookIsCreatedWithItsSecretOnceListedAndDeleted() throws {
        let fx = try Live.api()
        let r = try fx.admin(
            "POST", "/v1/webhooks",
            json: ["url": "https://backend.example.com/h", "events": ["event.finished", "event.finished", "channel.closed"]])
        #expect(r.status == 201)
        let id = try #require(r.json?["id"]?.stringValue)
        #expect(r.json?["secret"]?.stringValue?.hasPrefix("whsec_") == true)
        #expect(r.json?["events"] == ["event.finished", "channel.closed"])
        #expect(r.json?["channels"] == ["*"], "absent: every channel")
        let list = try fx.admin("GET", "/v1/webhooks")
        let mine = list.json?["webhooks"]?.arrayValue?.first { $0["id"]?.stringValue == id }
        #expect(mine?["url"] == "https://backend.example.com/h")
        #expect(mine?["secret"] == nil, "never listed")
        #expect(!list.text.contains(r.json?["secret"]?.stringValue ?? "-"))
        #expect(try fx.admin("DELETE", "/v1/webhooks/\(id)").status == 200)
        #expect(try fx.admin("GET", "/v1/webhooks").json?["webhooks"]?.arrayValue?.contains { $0["id"]?.stringValue == id } == false)
    }

    @Test(arguments: [
        (#"{"url":"ftp://a.example/h","events":["event.finished"]}"#, "invalid_field"),
        (#"{"url":"http://a.example/h","events":["event.finished"]}"#, "invalid_field"),
        (#"{"url":"https://10.0.0.5/h","events":["event.finished"]}"#, "invalid_field"),
        (#"{"url":"https://169.254.169.254/h","events":["event.finished"]}"#, "invalid_field"),
        (#"{"url":"https://u:p@a.example/h","events":["event.finished"]}"#, "invalid_field"),
        (#"{"url":"https://a.example/h","events":[]}"#, "invalid_field"),
        (#"{"url":"https://a.example/h","events":["event.started"]}"#, "invalid_field"),
        (#"{"url":"https://a.example/h","events":"event.finished"}"#, "invalid_field"),
        (#"{"url":"https://a.example/h"}"#, "missing_field"),
        (#"{"events":["event.finished"]}"#, "missing_field"),
        (#"{"url":"https://a.example/h","events":["event.finished"],"channels":["bad id!"]}"#, "invalid_field"),
        (#"{"url":"https://a.example/h","events":["event.finished"],"secret":"x"}"#, "unknown_field"),
    ])
    func badBodiesAre422WithACode(_ body: String, _ code: String) throws {
        let fx = try Live.api()
        let r = try fx.client.send("POST", "/v1/webhooks", token: fx.adminToken, body: Array(body.utf8), contentType: "application/json")
        #expect(r.status == 422, "\(body): \(r.status) \(r.text)")
        #expect(r.errorCode == code, "\(body)")
    }

    @Test func loopbackHTTPIsAllowedForTests() throws {
        let fx = try Live.api()
        for url in ["http://127.0.0.1:9/h", "http://[::1]:9/h", "http://localhost:9/h"] {
            #expect(
                try fx.admin("POST", "/v1/webhooks", json: ["url": .string(url), "events": ["channel.closed"]]).status == 201, "\(url)")
        }
    }
}
