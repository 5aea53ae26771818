import CSystem
import Glibc

/// The one way HeraldNet makes a system call (the shape of swift-nio's
/// `syscall(blocking:where:_:)`): `EINTR` is retried, a failure throws
/// `NetError.system` with the call's name and `errno`.
enum Sys {
    /// A call returning -1 on failure (`socket`, `fcntl`, `epoll_ctl`, …).
    @inline(__always) @discardableResult
    static func call(_ name: StaticString, _ body: () -> Int32) throws(NetError) -> Int32 {
        while true {
            let r = body()
            if r >= 0 { return r }
            let e = errno
            if e == EINTR { continue }
            throw NetError.system(name.description, e)
        }
    }

    /// A call on a non-blocking descriptor (`read`, `write`, `accept4`, `connect`): nil
    /// when it would block (`EAGAIN`, `EWOULDBLOCK`, or `also`, e.g. `EINPROGRESS`).
    @inline(__always)
    static func nonBlocking(_ name: StaticString, also: Int32 = EAGAIN, _ body: () -> Int) throws(NetError) -> Int? {
        while true {
            let r = body()
            if r >= 0 { return r }
            let e = errno
            if e == EINTR { continue }
            if e == EAGAIN || e == EWOULDBLOCK || e == also { return nil }
            throw NetError.system(name.description, e)
        }
    }

    /// `close(2)`: the descriptor is gone whatever it returns (Linux), so nothing to retry
    /// or report.
    @inline(__always)
    static func close(_ fd: Int32) {
        _ = Glibc.close(fd)
    }
}

/// Readiness of a descriptor, as the event loop reports and watches it (epoll's bits stay
/// inside `EventLoop`).
public struct IOEvents: OptionSet, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Data to read (or a connection to accept).
    public static let readable = IOEvents(rawValue: EPOLLIN.rawValue)
    /// Room to write (or a connect finished).
    public static let writable = IOEvents(rawValue: EPOLLOUT.rawValue)
    /// The peer shut down its side.
    public static let readHangup = IOEvents(rawValue: EPOLLRDHUP.rawValue)
    /// Reported, never asked for: an error on the descriptor.
    public static let error = IOEvents(rawValue: EPOLLERR.rawValue)
    /// Reported, never asked for: both sides hung up.
    public static let hangup = IOEvents(rawValue: EPOLLHUP.rawValue)
}
