import Foundation
import Glibc
import HeraldCore
import HeraldTestSupport
import Testing

extension Hostile {
    /// Issue 11: 2,000 idle connections from one address locked every other client out
    /// (1,024 connections at most, no per-address cap, idle ones kept 30 s). Against the
    /// built `herald serve` with its default limits (per-address cap 128, global cap from
    /// the file limit) and with a small global cap, while a well-behaved client on
    /// 127.0.0.1 makes a request every 200 ms.
    @Suite struct FrontDoor {
        /// The test process holds every flood socket: its own soft file limit goes up to
        /// the hard one (as `serve` does for itself).
        static func raiseOwnFileLimit(needed: Int) throws {
            var rl = rlimit()
            let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
            try #require(getrlimit(resource, &rl) == 0)
            if rl.rlim_cur < rl.rlim_max {
                rl.rlim_cur = rl.rlim_max
                _ = setrlimit(resource, &rl)
                _ = getrlimit(resource, &rl)
            }
            try #require(
                rl.rlim_cur >= rlim_t(needed),
                "RLIMIT_NOFILE hard limit \(rl.rlim_max) is below the \(needed) descriptors this test needs (ulimit -Hn)")
        }

        /// `count` connections that send nothing, from `addresses` in turn.
        static func flood(_ h: ServedHerald, _ count: Int, from addresses: [String]) throws -> [HostileClient] {
            var out: [HostileClient] = []
            out.reserveCapacity(count)
            for i in 0..<count { out.append(try HostileClient(port: h.port, from: addresses[i % addresses.count])) }
            return out
        }

        static func metrics(_ h: ServedHerald) throws -> PrometheusSample {
            let (r, _) = try h.timed("GET", "/metrics", token: false)
            try #require(r.status == 200)
            return PrometheusSample(r.text)
        }

        /// How the server counted the flood: refusals by reason, reclaims by phase.
        static func counts(_ h: ServedHerald) throws -> (perIP: Double, limit: Double, idle: Double, reading: Double, open: Double) {
            let m = try metrics(h)
            let api = ["listener": "api"]
            return (
                m.sum("herald_http_connections_refused_total", api.merging(["reason": "per_ip_limit"]) { $1 }),
                m.sum("herald_http_connections_refused_total", api.merging(["reason": "connection_limit"]) { $1 }),
                m.sum("herald_http_connections_reclaimed_total", api.merging(["phase": "idle"]) { $1 }),
                m.sum("herald_http_connections_reclaimed_total", api.merging(["phase": "reading_request"]) { $1 }),
                m.sum("herald_http_connections", api)
            )
        }

        @Test func twoThousandIdleConnectionsFromOneAddressDoNotLockOthersOut() throws {
            try Self.raiseOwnFileLimit(needed: 2_300)
            let h = try ServedHerald()
            try h.createChannel("door-a")
            let normal = NormalClient(h, channel: "door-a")
            normal.start()
            Thread.sleep(forTimeInterval: 0.5)  // a few requests before the flood, for comparison
            let idle = try Self.flood(h, 2_000, from: ["127.0.0.3"])
            Thread.sleep(forTimeInterval: 3)  // the flood held open while the client goes on
            let during = try Self.counts(h)
            let report = normal.stop()
            print("front door, 2,000 idle from 127.0.0.3: \(report)")
            report.check(expected: 3.5 / 0.2 * 0.6)
            // The per-address cap took exactly 128 of them and refused the rest at once.
            #expect(during.perIP == 1_872, "refused per_ip_limit: \(during.perIP)")
            #expect(during.limit == 0 && during.idle == 0)
            var ignored: [UInt8] = []
            let closed = idle.filter { $0.isClosedByPeer(received: &ignored) }.count
            #expect(closed == 1_872, "\(closed) flood connections closed by the server")
            for c in idle { c.close() }
            #expect(h.isAlive)
            let (after, t) = try h.timed("GET", "/v1/channels/door-a")
            #expect(after.status == 200 && t < 1)
        }

        @Test func twoThousandIdleConnectionsFromTwentyAddressesDoNotLockOthersOut() throws {
            try Self.raiseOwnFileLimit(needed: 2_300)
            let h = try ServedHerald()
            try h.createChannel("door-b")
            let before = try Self.metrics(h).sum("process_resident_memory_bytes")
            let normal = NormalClient(h, channel: "door-b")
            normal.start()
            Thread.sleep(forTimeInterval: 0.5)
            let addresses = (10...29).map { "127.0.0.\($0)" }
            let idle = try Self.flood(h, 2_000, from: addresses)  // 100 each, under the cap
            Thread.sleep(forTimeInterval: 3)
            let during = try Self.counts(h)
            let rss = try Self.metrics(h).sum("process_resident_memory_bytes")
            let report = normal.stop()
            print("front door, 2,000 idle from 20 addresses: \(report); resident memory +\(Int((rss - before) / 1024)) KiB for \(Int(during.open)) connections")
            report.check(expected: 3.5 / 0.2 * 0.6)
            // Under both caps: all held, none refused or reclaimed.
            #expect(during.open >= 2_000, "open: \(during.open)")
            #expect(during.perIP == 0 && during.limit == 0 && during.idle == 0)
            for c in idle { c.close() }
            #expect(h.isAlive)
            let (after, t) = try h.timed("GET", "/v1/channels/door-b")
            #expect(after.status == 200 && t < 1)
        }

        @Test func atASmallGlobalCapIdleConnectionsAreReclaimedForNewClients() throws {
            try Self.raiseOwnFileLimit(needed: 1_000)
            let h = try ServedHerald(env: ["HERALD_HTTP_MAX_CONNECTIONS": "200"])
            try h.createChannel("door-c")
            let normal = NormalClient(h, channel: "door-c")
            normal.start()
            Thread.sleep(forTimeInterval: 0.5)
            let addresses = (10...29).map { "127.0.0.\($0)" }
            let idle = try Self.flood(h, 600, from: addresses)  // 30 each: only the global cap applies
            Thread.sleep(forTimeInterval: 3)
            let report = normal.stop()
            let during = try Self.counts(h)
            print("front door, 600 idle at a cap of 200: \(report); counts \(during)")
            report.check(expected: 3.5 / 0.2 * 0.6)
            // Each connection past the 200th closed the longest-idle one: at least the 400
            // flood connections beyond the cap, plus one per normal request made meanwhile.
            #expect(during.idle >= 400, "reclaimed idle: \(during.idle)")
            #expect(during.limit == 0 && during.perIP == 0 && during.reading == 0)
            #expect(during.open <= 200, "open: \(during.open)")
            var ignored: [UInt8] = []
            let closed = idle.filter { $0.isClosedByPeer(received: &ignored) }.count
            #expect(closed >= 400 && Double(closed) <= during.idle, "\(closed) flood connections closed by the server")
            #expect(h.openDescriptors < 200 + 100, "the server holds \(h.openDescriptors) descriptors")
            for c in idle { c.close() }
            #expect(h.isAlive)
        }

        @Test func aResponseBeingSentIsNotCutShortByTheReclaim() throws {
            try Self.raiseOwnFileLimit(needed: 1_000)
            let h = try ServedHerald(env: ["HERALD_HTTP_MAX_CONNECTIONS": "200"])
            // The oldest connection: pipelined /metrics requests, not read, so that the
            // server is stuck sending their answers (the last asks to close, so the end is
            // seen).
            let slow = try HostileClient(port: h.port, from: "127.0.0.2", receiveBuffer: 4096)
            let pipelined = 900
            let request = "GET /metrics HTTP/1.1\r\nHost: herald\r\n\r\n"
            try slow.send(String(repeating: request, count: pipelined - 1) + "GET /metrics HTTP/1.1\r\nHost: herald\r\nConnection: close\r\n\r\n")
            var p = pollfd(fd: slow.fd, events: Int16(POLLIN), revents: 0)
            try #require(poll(&p, 1, 5000) == 1, "no answer started")
            let addresses = (10...29).map { "127.0.0.\($0)" }
            let idle = try Self.flood(h, 600, from: addresses)
            Thread.sleep(forTimeInterval: 1)
            let during = try Self.counts(h)
            #expect(during.idle >= 400, "reclaimed idle: \(during.idle)")  // the reclaim did run
            for c in idle { c.close() }

            // Every pipelined answer arrives whole, then the server closes as asked.
            let (bytes, closed) = slow.readUntilClose(timeout: 30)
            #expect(closed)
            let answers = bytes.ranges(of: Array("HTTP/1.1 200 OK\r\n".utf8)).count
            #expect(answers == pipelined, "\(answers) of \(pipelined) pipelined answers")
            // More than the server's largest send buffer plus the client's receive buffer
            // could hold: the server was still sending while the flood was reclaiming.
            let wmemMax = (try? String(contentsOfFile: "/proc/sys/net/ipv4/tcp_wmem", encoding: .utf8))?
                .split(whereSeparator: \.isWhitespace).last.flatMap { Int($0) } ?? (4 << 20)
            #expect(bytes.count > wmemMax + 2 * 4096, "only \(bytes.count) bytes of answers")
            print("front door, \(pipelined) pipelined answers (\(bytes.count) bytes) read after a reclaiming flood: \(answers) whole")
            #expect(try Self.counts(h).reading == 0)
            #expect(h.isAlive)
        }
    }
}

/// The well-behaved client: every 200 ms, on fresh connections from 127.0.0.1, `GET
/// /healthz` and an admin `GET /v1/channels/{id}`, each timed from connect to the whole
/// answer. Runs on its own thread between `start()` and `stop()`.
final class NormalClient: @unchecked Sendable {  // `results` and `running` under `lock`
    struct Report: CustomStringConvertible {
        var times: [Double]
        var failures: [String]

        var description: String {
            let sorted = times.sorted()
            func ms(_ q: Double) -> String {
                sorted.isEmpty ? "-" : String(format: "%.1f", sorted[min(sorted.count - 1, Int(q * Double(sorted.count)))] * 1000)
            }
            return "\(times.count) normal requests, p50 \(ms(0.5)) ms, p99 \(ms(0.99)) ms, max \(ms(1)) ms, \(failures.count) failed"
        }

        /// Every request answered (200) within 1 s, and enough of them made.
        func check(expected: Double, sourceLocation: SourceLocation = #_sourceLocation) {
            #expect(failures.isEmpty, "\(failures.prefix(5))", sourceLocation: sourceLocation)
            #expect(Double(times.count) >= expected, "only \(times.count) requests", sourceLocation: sourceLocation)
            #expect((times.max() ?? 0) < 1, "slowest: \(times.max() ?? 0) s", sourceLocation: sourceLocation)
        }
    }

    private let port: UInt16
    private let admin: String
    private let channel: String
    private let lock = NSLock()
    private var running = true
    private var report = Report(times: [], failures: [])
    private let done = DispatchSemaphore(value: 0)

    init(_ h: ServedHerald, channel: String) {
        port = h.port
        admin = h.admin
        self.channel = channel
    }

    func start() {
        Thread.detachNewThread { [self] in
            var next = Date()
            while lock.withLock({ running }) {
                for (target, auth) in [("/healthz", false), ("/v1/channels/\(channel)", true)] {
                    let (time, failure) = one(target, auth: auth)
                    lock.withLock {
                        report.times.append(time)
                        if let failure { report.failures.append("\(target): \(failure) after \(time) s") }
                    }
                }
                next += 0.2
                let wait = next.timeIntervalSinceNow
                if wait > 0 { Thread.sleep(forTimeInterval: wait) }
            }
            done.signal()
        }
    }

    func stop() -> Report {
        lock.withLock { running = false }
        done.wait()
        return lock.withLock { report }
    }

    private func one(_ target: String, auth: Bool) -> (Double, String?) {
        let start = Date()
        do {
            let c = try HostileClient(port: port)
            defer { c.close() }
            try c.send(
                "GET \(target) HTTP/1.1\r\nHost: herald\r\n" + (auth ? "Authorization: Bearer \(admin)\r\n" : "")
                    + "Connection: close\r\n\r\n")
            let r = c.readResponse(timeout: 5)
            let t = Date().timeIntervalSince(start)
            guard let r else { return (t, "no answer") }
            return (t, r.status == 200 ? nil : "status \(r.status)")
        } catch {
            return (Date().timeIntervalSince(start), "\(error)")
        }
    }
}
