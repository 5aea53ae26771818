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

        /// The start-up line that says which caps are in force and where they come from.
        static func budgetLine(_ h: ServedHerald) throws -> JSON {
            let line = try #require(h.serve.output.split(separator: "\n").first { $0.contains("\"herald.connection_budget\"") })
            return try JSON.parse(String(line))
        }

        @Test func theDefaultCapsComeFromTheFileLimitAndAreLoggedAtStart() throws {
            let h = try ServedHerald()
            let line = try Self.budgetLine(h)
            var rl = rlimit()
            try #require(getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &rl) == 0)
            let hard = Int(clamping: rl.rlim_max)
            // serve raised its soft limit to the hard one it inherited from this process.
            func int(_ key: String) -> Int { Int(line[key]?.intValue ?? -1) }
            let reserve = 256 + 16 * 4 + 4 * 4 + 256  // 4 HTTP threads, 4 APNs connections
            let expected = min(hard - reserve, 65_536)
            #expect(int("file_limit") == hard && int("file_limit_hard") == hard)
            #expect(line["source"]?.stringValue == "file_limit")
            #expect(int("reserve") == reserve)
            #expect(int("max_connections") == expected)
            #expect(int("max_connections_per_ip") == 128)
            let cap = try Self.metrics(h).sum("herald_http_connections_max", ["listener": "api"])
            #expect(cap == Double(expected))
        }

        @Test func anExplicitCapAboveWhatTheFileLimitAllowsIsRefusedAtStart() throws {
            var rl = rlimit()
            try #require(getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &rl) == 0)
            let tooMany = Int(clamping: rl.rlim_max) - 592 + 1
            try #require(tooMany <= 100_000, "the hard file limit allows every value the flag takes")
            let sim = try SimFixture()
            let p = Process()
            p.executableURL = URL(fileURLWithPath: ServeProcess.binary)
            p.arguments = ["serve", "--listen", "127.0.0.1:0", "--db", sim.dir + "/refused.db", "--http-max-connections", "\(tooMany)"]
            var env = ProcessInfo.processInfo.environment
            env["SWIFT_BACKTRACE"] = "enable=no"
            p.environment = env
            let err = Pipe()
            p.standardError = err
            p.standardOutput = FileHandle.nullDevice
            try p.run()
            let text = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            p.waitUntilExit()
            #expect(p.terminationStatus != 0)
            #expect(text.contains("--http-max-connections \(tooMany) needs a file limit of at least"), "\(text)")
            #expect(!text.contains("\"herald.started\""))
            #expect(!FileManager.default.fileExists(atPath: sim.dir + "/refused.db"), "the database was created before the refusal")
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
            print(
                "front door, 2,000 idle from 20 addresses: \(report); resident memory +\(Int((rss - before) / 1024)) KiB for \(Int(during.open)) connections"
            )
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
            let line = try Self.budgetLine(h)
            #expect(line["max_connections"]?.intValue == 200 && line["source"]?.stringValue == "setting")
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
            try slow.send(
                String(repeating: request, count: pipelined - 1) + "GET /metrics HTTP/1.1\r\nHost: herald\r\nConnection: close\r\n\r\n")
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
            let wmemMax =
                (try? String(contentsOfFile: "/proc/sys/net/ipv4/tcp_wmem", encoding: .utf8))?
                .split(whereSeparator: \.isWhitespace).last.flatMap { Int($0) } ?? (4 << 20)
            #expect(bytes.count > wmemMax + 2 * 4096, "only \(bytes.count) bytes of answers")
            print("front door, \(pipelined) pipelined answers (\(bytes.count) bytes) read after a reclaiming flood: \(answers) whole")
            #expect(try Self.counts(h).reading == 0)
            #expect(h.isAlive)
        }
    }
}
