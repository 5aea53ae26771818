import Foundation
import HeraldCore
import HeraldPostgres
import HeraldStore

/// `LISTEN "herald.events"` on a connection of its own, on a thread of its own: every event
/// a worker commits is one `NOTIFY` (its id as the payload, sent by the publish's
/// transaction, so delivered once it commits); late joiners a worker cannot catch up
/// itself are `NOTIFY`s of up to `joinedPerNotice` tokens (`Payload`). Each is handed to
/// `notice`. When the session is lost, notifications sent meanwhile are lost too:
/// `.missed` (poll now) once it is back, and the fan-out's poll covers the gap.
final class EventFeed: @unchecked Sendable {
    // @unchecked: `stopped` is atomic through `Locked`; the connection is the thread's own.
    static let channel = "herald.events"

    private let stopped = Locked(false)
    private let done = DispatchSemaphore(value: 0)

    init(options: PostgresOptions, worker: String, notice: @escaping @Sendable (FeedNotice) -> Void) {
        let t = Thread { [stopped, done] in
            ThreadName.set("pg-listen")
            Self.run(options: options, worker: worker, stopped: stopped, notice: notice)
            done.signal()
        }
        t.name = "pg-listen"
        t.start()
    }

    /// Stops listening; returns once the thread has closed its connection (within about
    /// half a second).
    func stop() {
        let was = stopped.withLock { s -> Bool in
            defer { s = true }
            return s
        }
        if !was { done.wait() }
    }

    private static func run(options: PostgresOptions, worker: String, stopped: Locked<Bool>, notice: @Sendable (FeedNotice) -> Void) {
        var connection: PostgresConnection?
        var failures = 0
        while !stopped.withLock({ $0 }) {
            do {
                if connection == nil {
                    let c = try PostgresConnection(options)
                    try c.listen(channel)
                    connection = c
                    if failures > 0 { notice(.missed) }
                    failures = 0
                }
                if let n = try connection?.nextNotification(timeout: .milliseconds(500)),
                    let parsed = Payload.parse(n.payload, ownWorker: worker)
                {
                    notice(parsed)
                }
            } catch {
                connection?.close()
                connection = nil
                failures += 1
                notice(.missed)
                // Back off up to 2 s, waking every 100 ms to see whether to stop.
                for _ in 0..<min(20, failures * 2) where !stopped.withLock({ $0 }) { usleep(100_000) }
            }
        }
        connection?.close()
    }
}

extension EventFeed {
    /// Late joiners per notification (64 hex characters and a newline each: about 6.5 KB,
    /// under PostgreSQL's 8000-byte payload limit).
    static let joinedPerNotice = 100

    /// The payloads on `herald.events`: an event id (`evt_…`), or late joiners as
    /// `j\n<worker id>\n<channel id>\n<hex token>\n…`.
    enum Payload {
        static func joined(worker: String, channelID: String, tokens: ArraySlice<[UInt8]>) -> String {
            (["j", worker, channelID] + tokens.map { Hex.encode($0) }).joined(separator: "\n")
        }

        /// What a payload says; nil for one to ignore (empty, malformed, or joiners this
        /// worker announced itself).
        static func parse(_ payload: String, ownWorker: String) -> FeedNotice? {
            guard payload.hasPrefix("j\n") else { return payload.isEmpty ? nil : .event(id: payload) }
            let parts = payload.split(separator: "\n", omittingEmptySubsequences: false)
            guard parts.count >= 4, parts[1] != ownWorker else { return nil }
            let tokens = parts.dropFirst(3).compactMap { Hex.decode(String($0)) }
            return tokens.isEmpty ? nil : .joined(channelID: String(parts[2]), tokens: tokens)
        }
    }
}
