import Dispatch
import Synchronization

/// Counts requests between their first handler call and their completion callback, so that
/// `stop()` can wait for them. One waiter at a time (the stopping thread).
final class InFlightRequests: Sendable {
    private struct State {
        var count = 0
        var idle: DispatchSemaphore?
    }

    private let state = Mutex(State())

    var count: Int { state.withLock { $0.count } }

    func begin() {
        state.withLock { $0.count += 1 }
    }

    func end() {
        let wake = state.withLock { s -> DispatchSemaphore? in
            s.count -= 1
            guard s.count == 0, let w = s.idle else { return nil }
            s.idle = nil
            return w
        }
        wake?.signal()
    }

    /// Blocks until no request is in flight or `seconds` have passed; true when idle.
    /// Called only by `HTTPServer.stop()`, never on a worker thread.
    func waitUntilIdle(seconds: Double) -> Bool {
        let semaphore = DispatchSemaphore(value: 0)
        let busy = state.withLock { s -> Bool in
            guard s.count > 0 else { return false }
            s.idle = semaphore
            return true
        }
        guard busy else { return true }
        if semaphore.wait(timeout: .now() + seconds) == .success { return true }
        state.withLock { $0.idle = nil }
        return false
    }
}
