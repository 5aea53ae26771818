import Foundation
import HeraldCore
import HeraldTestSupport
import Testing

extension Hostile {
    /// More connections than `--http-max-connections`: the server holds its limit, stays
    /// up, lets a new client in by closing the longest-idle connection, and keeps no
    /// descriptor behind. (Until issue 11 the one beyond the limit waited in the kernel's
    /// listen queue until the idle ones went away: one client's idle connections locked
    /// everyone out. FrontDoorTests covers that with 2,000 connections.)
    @Suite struct ConnectionFlood {
        @Test func connectionsBeyondTheLimitReclaimIdleOnesOrAreRefusedAtOnce() throws {
            // One address for all, so the per-address cap is off: this is the global cap.
            let h = try ServedHerald(env: [
                "HERALD_HTTP_MAX_CONNECTIONS": "32", "HERALD_HTTP_THREADS": "2", "HERALD_HTTP_TIMEOUT": "30",
                "HERALD_HTTP_MAX_CONNECTIONS_PER_IP": "0",
            ])
            #expect(try h.timed("GET", "/healthz", token: false).0.status == 200)
            let baseline = h.openDescriptors

            // 200 connections that send nothing: at most 32 are kept, each newcomer closing
            // the one idle longest.
            var idle: [HostileClient] = []
            for _ in 0..<200 { idle.append(try HostileClient(port: h.port)) }
            let waiting = try HostileClient(port: h.port)
            let start = Date()
            try waiting.send("GET /healthz HTTP/1.1\r\nHost: herald\r\nConnection: close\r\n\r\n")
            let r = waiting.readResponse(timeout: 5)
            let elapsed = Date().timeIntervalSince(start)
            let counts = try Hostile.FrontDoor.counts(h)
            #expect(r?.status == 200, "the newest client got \(String(describing: r?.status)); counts \(counts)")
            #expect(elapsed < 1, "served after \(elapsed) s")
            #expect(
                ServedHerald.eventually(timeout: 3) { h.openDescriptors <= baseline + 32 + 2 },
                "the server holds \(h.openDescriptors - baseline) connections")
            var ignored: [UInt8] = []
            let reclaimed = idle.filter { $0.isClosedByPeer(received: &ignored) }.count
            #expect(reclaimed >= 200 - 32, "\(reclaimed) idle connections closed")
            #expect(h.isAlive)
            for c in idle { c.close() }
            // Until the server has seen those closes, the burst below could reclaim one of them
            // and count it (a clean-clone CI run counted 93 against 79 unanswered).
            #expect(
                ServedHerald.eventually(timeout: 5) { h.openDescriptors <= baseline + 2 },
                "\(h.openDescriptors - baseline) idle connections still open")

            // 300 complete requests at once, beyond the 32 slots: each is answered, or —
            // when all 32 are busy, or idle only until their request is read — closed at once
            // unanswered and counted. None is left waiting. (Before issue 11 the ones beyond
            // the cap waited in the listen queue and all were answered; that queue is what
            // idle connections used to lock everyone out.)
            let before = try Hostile.FrontDoor.counts(h)
            var burst: [HostileClient] = []
            for _ in 0..<300 {
                let c = try HostileClient(port: h.port)
                try? c.send("GET /v1/channels HTTP/1.1\r\nHost: herald\r\nAuthorization: Bearer \(h.admin)\r\nConnection: close\r\n\r\n")
                burst.append(c)
            }
            var ok = 0
            var unanswered = 0
            for c in burst {
                let (bytes, closed) = c.readUntilClose(timeout: 15)
                #expect(closed, "a connection left open")
                if bytes.isEmpty { unanswered += 1 } else if RawResponse(bytes)?.status == 200 { ok += 1 }
            }
            let after = try Hostile.FrontDoor.counts(h)
            let counted = (after.limit - before.limit) + (after.idle - before.idle) + (after.reading - before.reading)
            print(
                "connection flood: 300 at once through 32 slots: \(ok) answered, \(unanswered) closed unanswered (counted \(Int(counted)))")
            #expect(ok + unanswered == burst.count, "\(burst.count - ok - unanswered) got something else")
            #expect(ok >= 32, "only \(ok) answered")
            #expect(Double(unanswered) == counted, "\(unanswered) unanswered, \(counted) counted as refused or reclaimed")
            for c in burst { c.close() }
            waiting.close()

            // Nothing kept per connection once they are gone.
            #expect(
                ServedHerald.eventually(timeout: 5) { h.openDescriptors <= baseline + 2 },
                "\(h.openDescriptors - baseline) descriptors left")
            #expect(h.isAlive)
        }
    }
}
