import Foundation
import HeraldCore
import HeraldTestSupport
import Testing

extension Hostile {
    /// Requests too big to take: refused early, answered, and the server serves the next
    /// client at once. (HeraldHTTPServerTests cover the bare server's limits; these send the
    /// same abuse to the product with its real limits: 32 KiB of headers, 16 MiB bodies,
    /// 64 KiB publish bodies.)
    @Suite struct OversizedRequests {
        @Test func hugeHeadersAndRequestLinesAreRefusedAndOthersStillServed() throws {
            let h = try ServedHerald()
            let big = String(repeating: "x", count: 64 << 10)
            let many = (0..<3000).map { "X-H\($0): v\r\n" }.joined()
            let cases: [(what: String, request: String, statuses: Set<Int>)] = [
                ("one 64 KiB header", "GET /v1/channels HTTP/1.1\r\nHost: herald\r\nX-Big: \(big)\r\n\r\n", [431]),
                ("3000 headers", "GET /v1/channels HTTP/1.1\r\nHost: herald\r\n\(many)\r\n", [431]),
                ("a 64 KiB request target", "GET /v1/channels/\(big) HTTP/1.1\r\nHost: herald\r\n\r\n", [414, 431]),
                // Under the limit, so it reaches the API: an unknown key, however long, is a 401.
                (
                    "a 16 KiB bearer token",
                    "GET /v1/channels HTTP/1.1\r\nHost: herald\r\nAuthorization: Bearer \(String(big.prefix(16 << 10)))\r\nConnection: close\r\n\r\n",
                    [401]
                ),
            ]
            for c in cases {
                let conn = try HostileClient(port: h.port)
                try? conn.send(c.request)
                let start = Date()
                let r = conn.readResponse(timeout: 5)
                #expect(r.map { c.statuses.contains($0.status) } == true, "\(c.what): \(String(describing: r?.status))")
                #expect(Date().timeIntervalSince(start) < 2, "\(c.what): answered after \(Date().timeIntervalSince(start)) s")
                if c.statuses == [401] { #expect(r?.errorCode == "unauthorized") }
                let (next, t) = try h.timed("GET", "/v1/channels")
                #expect(next.status == 200 && t < 1, "after \(c.what): \(next.status) in \(t) s")
            }
            #expect(h.isAlive)
        }

        @Test func aDeclaredGigabyteBodyGets413AtOnceWithoutBeingSent() throws {
            let h = try ServedHerald()
            try h.createChannel("big")
            let token = String(repeating: "ab", count: 32)
            for target in [
                "POST /v1/channels/big/events", "POST /v1/channels/big/subscriptions:batch",
                "PUT /v1/channels/big/subscriptions/\(token)", "POST /v1/channels",
            ] {
                let conn = try HostileClient(port: h.port)
                let start = Date()
                try conn.send(
                    "\(target) HTTP/1.1\r\nHost: herald\r\nAuthorization: Bearer \(h.admin)\r\n"
                        + "Content-Type: application/json\r\nContent-Length: 1000000000\r\n\r\n{\"aps\":")
                let r = conn.readResponse(timeout: 5)
                #expect(r?.status == 413, "\(target): \(String(describing: r?.status))")
                #expect(r?.errorCode == "request_too_large", "\(target)")
                #expect(Date().timeIntervalSince(start) < 2, "\(target): 413 after \(Date().timeIntervalSince(start)) s")
                // The server does not wait for the gigabyte: it closes the connection.
                #expect(conn.readUntilClose(timeout: 5).closed, "\(target): connection kept open")
            }
            let (r, t) = try h.timed("GET", "/healthz", token: false)
            #expect(r.status == 200 && t < 1)
        }

        @Test func aChunkedUploadThatNeverEndsIsCutOffNearTheLimitWhileOthersAreServed() throws {
            let h = try ServedHerald()
            try h.createChannel("stream")
            let rssBefore = try residentMiB(h)
            let conn = try HostileClient(port: h.port)
            try conn.send(
                "POST /v1/channels/stream/subscriptions:batch HTTP/1.1\r\nHost: herald\r\nAuthorization: Bearer \(h.admin)\r\n"
                    + "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
            let chunk = Array("10000\r\n".utf8) + [UInt8](repeating: UInt8(ascii: " "), count: 0x10000) + Array("\r\n".utf8)
            var sent = 0
            var pendingChunk = chunk[...]
            var received: [UInt8] = []
            var nextCheck = 4 << 20
            let start = Date()
            var cutOff = false
            // Up to 256 MiB or 30 s: the server must answer or close long before either.
            while sent < 256 << 20 && Date().timeIntervalSince(start) < 30 {
                let (n, open) = conn.sendWithoutBlocking(Array(pendingChunk))
                if !open || conn.isClosedByPeer(received: &received) || RawResponse(received) != nil {
                    cutOff = true
                    break
                }
                sent += n
                pendingChunk = pendingChunk.dropFirst(n)
                if pendingChunk.isEmpty { pendingChunk = chunk[...] }
                if n == 0 {
                    var p = pollfd(fd: conn.fd, events: Int16(POLLOUT | POLLIN), revents: 0)
                    _ = poll(&p, 1, 100)
                }
                if sent >= nextCheck {
                    // Someone else is served while the upload pours in.
                    let (r, t) = try h.timed("GET", "/healthz", token: false)
                    #expect(r.status == 200 && t < 1, "healthz during the upload: \(r.status) in \(t) s")
                    nextCheck += 4 << 20
                }
            }
            #expect(cutOff, "the server took \(sent >> 20) MiB in \(Date().timeIntervalSince(start)) s without answering")
            // 16 MiB accepted, at most as much again thrown away for the 413, plus socket buffers.
            #expect(sent < 40 << 20, "the server read \(sent >> 20) MiB before stopping")
            if let r = RawResponse(received) { #expect(r.status == 413) }
            let (r, t) = try h.timed("GET", "/v1/channels/stream")
            #expect(r.status == 200 && t < 1)
            // The body was not kept beyond its limit.
            #expect(try residentMiB(h) - rssBefore < 96, "RSS grew from \(rssBefore) MiB")
            #expect(h.isAlive)
        }

        @Test func aChunkedPublishOverItsOwnLimitGets413() throws {
            let h = try ServedHerald()
            try h.createChannel("pub")
            let conn = try HostileClient(port: h.port)
            try conn.send(
                "POST /v1/channels/pub/events HTTP/1.1\r\nHost: herald\r\nAuthorization: Bearer \(h.admin)\r\n"
                    + "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
            let chunk = "10000\r\n" + String(repeating: " ", count: 0x10000) + "\r\n"
            for _ in 0..<16 { try? conn.send(chunk) }  // 1 MiB: under the HTTP limit, over the publish limit
            try? conn.send("0\r\n\r\n")
            let r = conn.readResponse(timeout: 5)
            #expect(r?.status == 413)
            #expect(r?.errorCode == "request_too_large")
        }

        private func residentMiB(_ h: ServedHerald) throws -> Int {
            let status = try String(contentsOfFile: "/proc/\(h.serve.process.processIdentifier)/status", encoding: .utf8)
            let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") })
            let kb = try #require(Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]))
            return kb >> 10
        }
    }
}
