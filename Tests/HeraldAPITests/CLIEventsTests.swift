import Foundation
import HeraldCLI
import HeraldCore
import HeraldTestSupport
import Testing

/// `herald events list|show|cancel` against the real server.
@Suite(.liveAPI) struct CLIEventsTests {
    func herald(_ fx: APIFixture, _ args: [String]) -> CLIAgainstServerTests.Run {
        CLIAgainstServerTests().herald(fx, args)
    }

    @Test func listShowAndCancelAScheduledEvent() throws {
        let fx = try Live.api()
        let channel = unique("cli-events")
        try fx.createChannel(channel)
        let live = try #require(try fx.publish(channel, update(["s": 1])).json?["event_id"]?.stringValue)
        let sendAt = nowSeconds() + 3600
        let scheduled = try #require(
            try fx.publish(channel, ["send_at": .int(sendAt), "aps": update(["s": 2])["aps"]!]).json?["event_id"]?.stringValue)

        let table = herald(fx, ["events", "list", channel])
        #expect(table.code == 0, "\(table.err)")
        let lines = table.out.split(separator: "\n")
        #expect(lines.first?.hasPrefix("SEQ") == true && lines.first?.contains("SEND AT") == true)
        #expect(lines.count == 3)
        #expect(lines[1].contains(scheduled) && lines[1].contains("scheduled"), "newest first")
        #expect(lines[2].contains(live))

        let page = herald(fx, ["events", "list", channel, "--limit", "1", "--json"])
        #expect(page.json?["events"]?.arrayValue?.count == 1)
        #expect(page.json?["next_before"]?.intValue != nil)
        #expect(page.err.contains("--before"), "the next page's command")
        let onlyScheduled = herald(fx, ["events", "list", channel, "--state", "scheduled", "--json"])
        #expect(onlyScheduled.json?["events"]?.arrayValue?.compactMap { $0["event_id"]?.stringValue } == [scheduled])

        let shown = herald(fx, ["events", "show", channel, scheduled])
        #expect(shown.code == 0 && shown.out.contains("state:") && shown.out.contains("scheduled"))
        let shownJSON = herald(fx, ["events", "show", channel, scheduled, "--json"])
        #expect(shownJSON.json?["send_at"] == .int(sendAt))

        let cancelled = herald(fx, ["events", "cancel", channel, scheduled])
        #expect(cancelled.code == 0, "\(cancelled.err)")
        #expect(cancelled.out.hasPrefix("cancelled event \(scheduled) on \(channel)\n"))
        #expect(cancelled.out.contains("cancelled"))
        let again = herald(fx, ["events", "cancel", channel, scheduled])
        #expect(again.code == 1 && again.err.contains("409 not_scheduled"), "\(again.err)")
        #expect(herald(fx, ["events", "show", channel, "evt_none"]).code == 1)
        #expect(herald(fx, ["events", "list", channel, "--state", "lost"]).code == 2)
        #expect(herald(fx, ["events", "list", channel, "--limit", "0"]).code == 2)
        #expect(herald(fx, ["events", "list"]).code == 2)
        #expect(herald(fx, ["events", "cancel", channel]).code == 2)
    }

    @Test func publishSendAtSchedulesTheEvent() throws {
        let fx = try Live.api()
        let channel = unique("cli-send-at")
        try fx.createChannel(channel)
        let sendAt = nowSeconds() + 600
        let r = herald(fx, ["publish", channel, "--json", #"{"event":"update","content-state":{"s":1}}"#, "--send-at", String(sendAt)])
        #expect(r.code == 0, "\(r.err)")
        #expect(r.out.contains("scheduled"), "\(r.out)")
        let listed = try #require(try fx.admin("GET", "/v1/channels/\(channel)/events").json?["events"]?.arrayValue)
        #expect(listed.count == 1 && listed.first?["state"] == "scheduled" && listed.first?["send_at"] == .int(sendAt))
        #expect(herald(fx, ["publish", channel, "--json", "{}", "--send-at", "soon"]).code == 2)
    }

    @Test func channelsCreateExpiresAt() throws {
        let fx = try Live.api()
        let id = unique("cli-expiring")
        let at = nowSeconds() + 7200
        let r = herald(fx, ["channels", "create", id, "--bundle-id", "com.example.app", "--expires-at", String(at)])
        #expect(r.code == 0, "\(r.err)")
        #expect(r.out.contains("expires_at:      20"), "\(r.out)")
        #expect(try fx.admin("GET", "/v1/channels/\(id)").json?["expires_at"] == .int(at))
        #expect(herald(fx, ["channels", "create", unique("x"), "--bundle-id", "com.example.app", "--expires-at", "soon"]).code == 2)
    }
}
