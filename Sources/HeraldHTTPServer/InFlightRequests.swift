import Dispatch
import Synchronization

/// Counts requests between their first handler call and their completion callback, so that
/// `stop()` can wait for them. One waiter, once (the stopping thread).
///
/// Atomics rather than a `Mutex`: two atomic operations per request on the hot path, and
/// ThreadSanitizer sees them (it does not see `Mutex` on Linux, which waits on a raw futex,
/// and reports its critical sections as races).
final class InFlightRequests: Sendable {
    private let active = Atomic<Int>(0)
    private let waiting = Atomic<Bool>(false)
    private let idle = DispatchSemaphore(value: 0)

    var count: Int { active.load(ordering: .sequentiallyConsistent) }

    func begin() {
        active.add(1, ordering: .sequentiallyConsistent)
    }

    func end() {
        // Sequentially consistent on both sides: either this sees `waiting` set, or the
        // waiter sees the count at 0 (the two stores cannot both go unseen).
        let now = active.subtract(1, ordering: .sequentiallyConsistent).newValue
        if now == 0 && waiting.load(ordering: .sequentiallyConsistent) { idle.signal() }
    }

    /// Blocks until no request is in flight or `seconds` have passed; true when idle.
    /// Called only by `HTTPServer.stop()`, never on a worker thread.
    func waitUntilIdle(seconds: Double) -> Bool {
        waiting.store(true, ordering: .sequentiallyConsistent)
        let deadline = DispatchTime.now() + seconds
        while active.load(ordering: .sequentiallyConsistent) > 0 {
            // A signal can be stale (the count went to 0, then a keep-alive connection sent
            // another request), so the count is checked again after every wake-up.
            if idle.wait(timeout: deadline) == .timedOut { return active.load(ordering: .sequentiallyConsistent) == 0 }
        }
        return true
    }
}
