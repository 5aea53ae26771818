import CSystem
import Foundation
import Glibc
import HeraldCore
import Synchronization

/// Something that owns a file descriptor registered with an `EventLoop`.
/// `handleEvents` is called on the loop's thread with what the descriptor is ready for.
public protocol FDHandler: AnyObject {
    func handleEvents(_ events: IOEvents)
}

/// A single-threaded epoll loop: I/O objects registered with it are confined to its
/// thread (style §7). Other threads hand it work with `execute`.
///
/// `@unchecked Sendable`: the only state touched from other threads is `pending`
/// (behind its lock) and the wake eventfd; everything else is loop-confined.
public final class EventLoop: @unchecked Sendable {
    public let name: String
    private let epfd: Int32
    private let wakefd: Int32
    /// Tasks from other threads; `closed` once the loop's thread has ended.
    private let pending = Locked(Pending())
    private struct Pending {
        var tasks: [UncheckedBox<() -> Void>] = []
        var closed = false
    }
    private let stopping = Atomic<Bool>(false)
    private let threadID = Atomic<UInt>(0)
    private let finished = DispatchSemaphore(value: 0)

    // Loop-confined.
    private var handlers: [Int32: FDHandler] = [:]
    private var timers = TimerHeap()
    private var timerSeq: UInt64 = 0

    /// Creates the loop and starts its thread. Throws `NetError` if epoll or eventfd fail.
    public init(name: String) throws {
        // A peer that hangs up makes write(2) raise SIGPIPE, which would kill the process:
        // ignore it and see EPIPE instead (OpenSSL's socket BIO uses plain write).
        _ = Self.ignoreSIGPIPE
        self.name = name
        let ep = try Sys.call("epoll_create1") { epoll_create1(Int32(EPOLL_CLOEXEC)) }
        let wake: Int32
        do {
            wake = try Sys.call("eventfd") { eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC)) }
        } catch {
            Sys.close(ep)
            throw error
        }
        var ev = epoll_event()
        ev.events = EPOLLIN.rawValue
        ev.data.fd = wake
        do {
            try Sys.call("epoll_ctl(ADD)") { epoll_ctl(ep, EPOLL_CTL_ADD, wake, &ev) }
        } catch {
            Sys.close(ep)
            Sys.close(wake)
            throw error
        }
        epfd = ep
        wakefd = wake
        // The thread keeps the loop alive until `shutdown()`.
        let t = Thread { [self] in
            ThreadName.set(name)
            self.run()
        }
        t.name = name
        t.stackSize = 1 << 20
        t.start()
    }

    private static let ignoreSIGPIPE: Void = { signal(SIGPIPE, SIG_IGN) }()

    deinit {
        Sys.close(epfd)
        Sys.close(wakefd)
    }

    /// True on the loop's own thread.
    public var inEventLoop: Bool { threadID.load(ordering: .acquiring) == UInt(pthread_self()) }

    /// Runs `task` on the loop thread, soon. Callable from any thread, including the loop's.
    public func execute(_ task: @escaping @Sendable () -> Void) {
        executeUnchecked(task)
    }

    /// As `execute`, for closures that capture loop-confined (non-Sendable) objects: the
    /// caller promises the captured state is only touched on the loop.
    public func executeUnchecked(_ task: @escaping () -> Void) {
        // After the loop ended the task could never run; kept, it would keep what it
        // captures (often the loop itself) alive forever.
        let wasEmpty = pending.withLock { p -> Bool? in
            guard !p.closed else { return nil }
            p.tasks.append(UncheckedBox(task))
            return p.tasks.count == 1
        }
        // On the loop's own thread no wake-up is needed (a write and a read of the eventfd
        // per loop turn): the loop runs pending tasks after the events and timers it is
        // handling, and does not sleep while tasks are pending.
        if wasEmpty == true && !inEventLoop { wake() }
    }

    private func wake() {
        var one: UInt64 = 1
        // EAGAIN: the counter is already non-zero, the loop wakes anyway.
        _ = try? Sys.nonBlocking("write(eventfd)") { write(wakefd, &one, 8) }
    }

    /// Stops the loop after the work queued so far and waits for its thread to end.
    /// Must not be called on the loop thread.
    public func shutdown() {
        precondition(!inEventLoop, "EventLoop.shutdown() called on its own thread")
        if stopping.exchange(true, ordering: .acquiringAndReleasing) { return }
        wake()
        finished.wait()
    }

    // MARK: - loop-only API

    /// Adds `fd` to the loop. Loop thread only.
    public func register(fd: Int32, interest: IOEvents, handler: FDHandler) throws(NetError) {
        assert(inEventLoop)
        var ev = epoll_event()
        ev.events = interest.rawValue
        ev.data.fd = fd
        try Sys.call("epoll_ctl(ADD)") { epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) }
        handlers[fd] = handler
    }

    /// Changes the events watched for `fd`. Loop thread only.
    public func modify(fd: Int32, interest: IOEvents) {
        assert(inEventLoop)
        var ev = epoll_event()
        ev.events = interest.rawValue
        ev.data.fd = fd
        // Fails only for a descriptor that is not registered: nothing to watch then.
        _ = try? Sys.call("epoll_ctl(MOD)") { epoll_ctl(epfd, EPOLL_CTL_MOD, fd, &ev) }
    }

    /// Removes `fd` from the loop (the caller closes it). Loop thread only.
    public func unregister(fd: Int32) {
        assert(inEventLoop)
        _ = try? Sys.call("epoll_ctl(DEL)") { epoll_ctl(epfd, EPOLL_CTL_DEL, fd, nil) }
        handlers[fd] = nil
    }

    /// Calls `fn` on the loop after `seconds`. Loop thread only. Cancel with `timer.cancel()`.
    @discardableResult
    public func schedule(after seconds: Double, _ fn: @escaping () -> Void) -> LoopTimer {
        assert(inEventLoop)
        timerSeq &+= 1
        // Clamped to ~31 years: a larger delay (or +inf) would trap converting to UInt64
        // nanoseconds; NaN and negatives mean "now".
        let nanos = seconds > 0 ? UInt64(min(seconds, 1e9) * 1e9) : 0
        let t = LoopTimer(deadline: Monotonic.nanos() &+ nanos, seq: timerSeq, fn: fn)
        timers.push(t)
        return t
    }

    // MARK: - the loop

    private func run() {
        threadID.store(UInt(pthread_self()), ordering: .releasing)
        let events = UnsafeMutablePointer<epoll_event>.allocate(capacity: 256)
        events.initialize(repeating: epoll_event(), count: 256)
        defer { events.deallocate() }
        while true {
            runTimers()
            let timeout = nextTimeoutMillis()
            let n: Int32
            do {
                n = try Sys.call("epoll_wait") { epoll_wait(epfd, events, 256, timeout) }
            } catch {
                fatalError("\(error)")
            }
            for i in 0..<Int(n) {
                let fd = events[i].data.fd
                if fd == wakefd {
                    var v: UInt64 = 0
                    _ = try? Sys.nonBlocking("read(eventfd)") { read(wakefd, &v, 8) }
                    continue
                }
                handlers[fd]?.handleEvents(IOEvents(rawValue: events[i].events))
            }
            runPending()
            if stopping.load(ordering: .acquiring) {
                runPending()
                break
            }
        }
        // Let handlers close themselves: drop references so deinit runs on this thread.
        handlers.removeAll()
        timers = TimerHeap()
        // Tasks queued since the last round (a DNS answer arriving during shutdown) will
        // never run: release them, or a task holding the loop would leak both. Released
        // outside the lock: a task's captures may queue another as they go.
        var dropped = pending.withLock { p in
            p.closed = true
            defer { p.tasks = [] }
            return p.tasks
        }
        dropped.removeAll()
        threadID.store(0, ordering: .releasing)
        finished.signal()
    }

    private func runPending() {
        // Tasks queued by tasks run in the next round, so one busy producer can't starve I/O.
        let tasks = pending.withLock { p in
            defer { p.tasks.removeAll(keepingCapacity: true) }
            return p.tasks
        }
        for t in tasks { t.value() }
    }

    private func runTimers() {
        let now = Monotonic.nanos()
        while let top = timers.peek(), top.deadline <= now {
            timers.pop()
            if !top.cancelled {
                top.cancelled = true
                top.fn()
            }
        }
    }

    private func nextTimeoutMillis() -> Int32 {
        let hasPending = pending.withLock { !$0.tasks.isEmpty }
        if hasPending { return 0 }
        guard let top = timers.peek() else { return 1000 }
        let now = Monotonic.nanos()
        if top.deadline <= now { return 0 }
        return Int32(min(1000, (top.deadline - now + 999_999) / 1_000_000))
    }
}

/// A timer scheduled on an `EventLoop`. Touch only on the loop thread.
public final class LoopTimer {
    let deadline: UInt64
    let seq: UInt64
    let fn: () -> Void
    var cancelled = false

    init(deadline: UInt64, seq: UInt64, fn: @escaping () -> Void) {
        self.deadline = deadline
        self.seq = seq
        self.fn = fn
    }

    /// Cancels the timer if it has not fired. Loop thread only.
    public func cancel() { cancelled = true }
}

/// A binary min-heap of timers by (deadline, seq).
struct TimerHeap {
    private var items: [LoopTimer] = []

    func peek() -> LoopTimer? { items.first }

    private static func less(_ a: LoopTimer, _ b: LoopTimer) -> Bool {
        a.deadline != b.deadline ? a.deadline < b.deadline : a.seq < b.seq
    }

    mutating func push(_ t: LoopTimer) {
        items.append(t)
        var i = items.count - 1
        while i > 0 {
            let p = (i - 1) / 2
            if Self.less(items[i], items[p]) {
                items.swapAt(i, p)
                i = p
            } else {
                break
            }
        }
    }

    @discardableResult
    mutating func pop() -> LoopTimer? {
        guard !items.isEmpty else { return nil }
        items.swapAt(0, items.count - 1)
        let top = items.removeLast()
        var i = 0
        while true {
            let l = 2 * i + 1
            let r = l + 1
            var m = i
            if l < items.count && Self.less(items[l], items[m]) { m = l }
            if r < items.count && Self.less(items[r], items[m]) { m = r }
            if m == i { break }
            items.swapAt(i, m)
            i = m
        }
        return top
    }
}
