/// When a client connection PINGs and when it gives up on the answer, as a value: Apple
/// asks for a PING only after a long idle time (reference §1.3), and a PING unanswered
/// within `timeout` means the connection is dead. Times are monotonic nanoseconds.
struct HTTP2Keepalive: Equatable {
    enum Decision: Equatable {
        case nothing
        /// Send a PING now.
        case ping
        /// The PING sent at this time was not answered in time: close the connection.
        case dead(sentAt: UInt64)
    }

    let idleNanos: UInt64
    let timeoutNanos: UInt64
    /// When the PING in flight was sent.
    private(set) var sentAt: UInt64?

    init(pingAfterIdle: Double, pingTimeout: Double) {
        idleNanos = UInt64(max(0, pingAfterIdle) * 1e9)
        timeoutNanos = UInt64(max(0, pingTimeout) * 1e9)
    }

    /// Called by the connection's watchdog. `lastActivity`: when a byte last arrived.
    mutating func tick(now: UInt64, lastActivity: UInt64) -> Decision {
        if let sent = sentAt {
            return now &- sent > timeoutNanos ? .dead(sentAt: sent) : .nothing
        }
        guard now &- lastActivity > idleNanos else { return .nothing }
        sentAt = now
        return .ping
    }

    /// The peer answered the PING.
    mutating func acknowledged() { sentAt = nil }
}
