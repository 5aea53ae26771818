import Foundation
import Testing

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
