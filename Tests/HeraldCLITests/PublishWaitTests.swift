import HeraldCore
import HeraldHTTPServer
import Testing

@testable import HeraldCLI

@Suite struct PublishWaitTests {
    /// A stub whose event advances one step per poll through `states`.
    static func stub(_ states: [JSON]) throws -> StubServer {
        try StubServer { r, n in
            switch (r.method, r.path) {
            case ("POST", "/v1/channels/match-1/events"): return .json(202, APIShapes.accepted)
            case ("GET", "/v1/channels/match-1/events/evt_1"): return .json(200, states[min(n - 1, states.count - 1)])
            default: return .error(404, code: "not_found", message: "stub")
            }
        }
    }

    @Test func waitPollsUntilDoneShowingProgressThenASummary() throws {
        let stub = try Self.stub([
            APIShapes.event("sending", sent: 40), APIShapes.event("sending", sent: 80),
            APIShapes.event("done", sent: 97, failed: 1, pruned: 2),
        ])
        let r = stub.run(["publish", "match-1", "--json", #"{"event":"update"}"#, "--wait"])
        #expect(r.code == 0)
        #expect(stub.requests.map(\.method) == ["POST", "GET", "GET", "GET"])
        #expect(r.err.hasPrefix("sending  40/100 (40%)"))
        #expect(r.out.contains("published event evt_1"))
        #expect(r.out.contains("\nevent evt_1 done\n"))
        #expect(r.out.contains("duration: "))
        #expect(r.out.contains("sent:     97 of 100"))
        #expect(r.out.contains("pruned:   2"))
        #expect(r.out.contains("retried:  4"))
    }

    @Test func onATerminalTheProgressLineIsRedrawnInPlace() throws {
        let stub = try Self.stub([
            APIShapes.event("queued"), APIShapes.event("sending", sent: 50), APIShapes.event("done", sent: 100),
        ])
        let r = stub.run(["publish", "match-1", "--json", #"{"event":"update"}"#, "--wait"], tty: true)
        #expect(r.code == 0)
        #expect(r.err.hasPrefix("\rqueued   0/100 (0%)\u{1B}[K\rsending  50/100 (50%)"))
        #expect(r.err.filter { $0 == "\n" }.count == 1)
        #expect(r.err.hasSuffix("\u{1B}[K\n"))
        #expect(r.out.contains("sent:     100 of 100"))
    }

    @Test func aFailedEventExits1WithItsReason() throws {
        let stub = try Self.stub([APIShapes.event("failed", sent: 0, failureReason: "BadTopic: the bundle id does not match")])
        let r = stub.run(["publish", "match-1", "--json", #"{"event":"update"}"#, "--wait"])
        #expect(r.code == 1)
        #expect(r.out.contains("failure_reason: BadTopic: the bundle id does not match"))
    }

    @Test func aSupersededEventExits0AndNamesTheNewerOne() throws {
        let stub = try Self.stub([APIShapes.event("superseded", sent: 10, supersededBy: "evt_2")])
        let r = stub.run(["publish", "match-1", "--json", #"{"event":"update"}"#, "--wait"])
        #expect(r.code == 0)
        #expect(r.out.contains("superseded_by: evt_2"))
    }

    @Test func theProgressLineShowsCountsPercentRateAndETA() {
        let e = APIShapes.event("sending", sent: 41_000, targets: 100_000, failed: 500, pruned: 500)
        #expect(PublishWait.progressLine(e, rate: 38_500) == "sending  42,000/100,000 (42%)  38,500/s  ETA 2s")
        #expect(PublishWait.progressLine(APIShapes.event("queued"), rate: nil) == "queued   0/100 (0%)")
        #expect(PublishWait.eta(65) == "1m05s")
        #expect(PublishWait.eta(7300) == "2h01m")
    }

    @Test func theLiveLineRedrawsInPlaceOnATerminalAndThrottlesOtherwise() {
        let plain = Console(capture: true)
        let line = LiveLine(console: plain, interval: 2)
        line.update("a", now: 10)
        line.update("b", now: 11)
        line.update("c", now: 12)
        line.finish()
        #expect(plain.capturedError == "a\nc\n")

        let tty = Console(capture: true, isTTY: true)
        let redrawn = LiveLine(console: tty, interval: 2)
        redrawn.update("sending  1/2", now: 10)
        redrawn.update("sending  2/2", now: 10.2)
        redrawn.finish()
        #expect(tty.capturedError == "\rsending  1/2\u{1B}[K\rsending  2/2\u{1B}[K\n")
    }

    @Test func theRateIsMeasuredOverTheWindow() {
        var m = RateMeter(window: 3)
        m.record(0, at: 0)
        #expect(m.perSecond == nil)
        m.record(1000, at: 1)
        m.record(3000, at: 2)
        #expect(m.perSecond == 1500)
        m.record(9000, at: 5)
        #expect(m.perSecond == 2000)
    }
}
