import Foundation
import HeraldCore
import HeraldTestSupport
import Testing

extension Hostile {
    /// Slowloris against the assembled server: clients that open requests and never finish
    /// them must not slow anyone else down, and the stalled ones go at `--http-timeout`.
    /// (HeraldHTTPServerTests/TimeoutTests cover the timeout of the bare HTTP server; this
    /// checks the product as configured by its flags, under many such clients at once.)
    @Suite struct SlowClients {
        @Test func slowlorisClientsDoNotDelayOthersAndStalledOnesAreDroppedAtTheTimeout() throws {
            let h = try ServedHerald(env: ["HERALD_HTTP_TIMEOUT": "2"])
            try h.createChannel("slow")
            let publish: JSON = ["aps": ["event": "update", "content-state": ["home": 1]]]

            // 60 clients stop in the middle of their headers; 20 more drip one header byte
            // every 250 ms, which keeps resetting the idle timeout.
            var stalled: [HostileClient] = []
            for _ in 0..<60 {
                let c = try HostileClient(port: h.port)
                try c.send("POST /v1/channels/slow/events HTTP/1.1\r\nHost: herald\r\nContent-Type: application/json\r\nX-Slow: ")
                stalled.append(c)
            }
            var drippers: [HostileClient] = []
            for _ in 0..<20 {
                let c = try HostileClient(port: h.port)
                try c.send("GET /v1/channels HTTP/1.1\r\nHost: herald\r\nX-Drip: ")
                drippers.append(c)
            }
            let attackStart = Date()

            var closedAfter: [Int: Double] = [:]
            var worst = 0.0
            var served = 0
            var nextDrip = Date()
            while Date().timeIntervalSince(attackStart) < 4.5 {
                if Date() >= nextDrip {
                    for d in drippers { _ = d.sendWithoutBlocking([UInt8(ascii: "a")]) }
                    nextDrip += 0.25
                }
                let (health, t1) = try h.timed("GET", "/healthz", token: false)
                let (channel, t2) = try h.timed("GET", "/v1/channels/slow")
                let (dryRun, t3) = try h.timed("POST", "/v1/channels/slow/events?dry_run=true", json: publish)
                #expect(health.status == 200)
                #expect(channel.status == 200)
                #expect(dryRun.status == 200, "\(dryRun.text)")
                worst = max(worst, t1, t2, t3)
                served += 3
                for (i, c) in stalled.enumerated() where closedAfter[i] == nil {
                    var ignored: [UInt8] = []
                    if c.isClosedByPeer(received: &ignored) { closedAfter[i] = Date().timeIntervalSince(attackStart) }
                }
            }
            // Well-behaved clients were answered all along, each faster than the timeout
            // that rids the server of a stalled client.
            #expect(served >= 30, "only \(served) answers in 4.5 s")
            #expect(worst < 2.0, "slowest well-behaved answer took \(worst) s")
            // Every stalled client was dropped, at the timeout and not before.
            #expect(closedAfter.count == stalled.count, "\(stalled.count - closedAfter.count) stalled clients still connected")
            #expect(closedAfter.values.allSatisfy { $0 >= 1.5 }, "dropped before the 2 s timeout: \(closedAfter.values.min() ?? 0) s")
            #expect(h.isAlive)
        }
    }
}
