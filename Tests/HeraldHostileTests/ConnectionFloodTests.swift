import Foundation
import HeraldCore
import HeraldTestSupport
import Testing

extension Hostile {
    /// More connections than `--http-max-connections`: the server holds its limit, stays
    /// up, serves the ones waiting once others close, and keeps no descriptor behind.
    @Suite struct ConnectionFlood {
        @Test func connectionsBeyondTheLimitWaitAndAreServedOnceOthersClose() throws {
            let h = try ServedHerald(env: ["HERALD_HTTP_MAX_CONNECTIONS": "32", "HERALD_HTTP_THREADS": "2", "HERALD_HTTP_TIMEOUT": "30"])
            #expect(try h.timed("GET", "/healthz", token: false).0.status == 200)
            let baseline = h.openDescriptors

            // 200 connections that send nothing: 32 are accepted, the rest wait in the
            // kernel's listen queue.
            var idle: [HostileClient] = []
            for _ in 0..<200 { idle.append(try HostileClient(port: h.port)) }
            let waiting = try HostileClient(port: h.port)
            try waiting.send("GET /healthz HTTP/1.1\r\nHost: herald\r\nConnection: close\r\n\r\n")
            // Give the server time to accept all it will (up to its limit) before judging.
            _ = ServedHerald.eventually(timeout: 3) { h.openDescriptors >= baseline + 32 }
            #expect(waiting.readResponse(timeout: 0.5) == nil, "answered although 200 connections were ahead of it")
            #expect(h.openDescriptors <= baseline + 32 + 2, "the server holds \(h.openDescriptors - baseline) connections")
            #expect(h.isAlive)

            for c in idle { c.close() }
            let start = Date()
            let r = waiting.readResponse(timeout: 10)
            #expect(r?.status == 200, "the waiting client got \(String(describing: r?.status))")
            #expect(Date().timeIntervalSince(start) < 3, "served \(Date().timeIntervalSince(start)) s after the others closed")

            // 300 complete requests at once through the 32 slots: every one is answered.
            var burst: [HostileClient] = []
            for _ in 0..<300 {
                let c = try HostileClient(port: h.port)
                try c.send("GET /v1/channels HTTP/1.1\r\nHost: herald\r\nAuthorization: Bearer \(h.admin)\r\nConnection: close\r\n\r\n")
                burst.append(c)
            }
            var ok = 0
            for c in burst where c.readResponse(timeout: 15)?.status == 200 { ok += 1 }
            #expect(ok == burst.count, "\(burst.count - ok) of \(burst.count) requests unanswered")
            for c in burst { c.close() }
            waiting.close()

            // Nothing kept per connection once they are gone.
            #expect(ServedHerald.eventually(timeout: 5) { h.openDescriptors <= baseline + 2 }, "\(h.openDescriptors - baseline) descriptors left")
            #expect(h.isAlive)
        }
    }
}
