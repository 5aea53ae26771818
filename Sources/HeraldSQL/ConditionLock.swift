import HeraldCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A pthread mutex with condition variables that time out on the monotonic clock.
///
/// Synchronization's `Mutex` has no condition variables, and Foundation's `NSCondition`
/// times out on the wall clock, which can jump; the write queue's enqueue deadline must not.
final class ConditionLock: @unchecked Sendable {  // the pthread objects synchronize themselves
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    init() {
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    func lock() { pthread_mutex_lock(mutex) }
    func unlock() { pthread_mutex_unlock(mutex) }

    /// Runs `body` holding the lock.
    func withLock<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        lock()
        defer { unlock() }
        return try body()
    }

    /// A condition variable used with this lock.
    final class Condition: @unchecked Sendable {  // the pthread objects synchronize themselves
        private let cond: UnsafeMutablePointer<pthread_cond_t>
        private let lock: ConditionLock

        init(_ lock: ConditionLock) {
            self.lock = lock
            cond = .allocate(capacity: 1)
            var attr = pthread_condattr_t()
            pthread_condattr_init(&attr)
            #if os(Linux)
            pthread_condattr_setclock(&attr, CLOCK_MONOTONIC)
            #endif
            pthread_cond_init(cond, &attr)
            pthread_condattr_destroy(&attr)
        }

        deinit {
            pthread_cond_destroy(cond)
            cond.deallocate()
        }

        /// Waits for a signal; the lock must be held. Wakes spuriously: loop on a predicate.
        func wait() { pthread_cond_wait(cond, lock.mutex) }

        /// Waits for a signal until `deadline` (`Monotonic.nanos()`, i.e. `CLOCK_MONOTONIC`); the lock must
        /// be held. Returns false when the deadline passed.
        func wait(untilNanos deadline: UInt64) -> Bool {
            #if os(Linux)
            var ts = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
            return pthread_cond_timedwait(cond, lock.mutex, &ts) != ETIMEDOUT
            #else
            // No monotonic condattr on Darwin: wait for the time left instead.
            let now = Monotonic.nanos()
            guard deadline > now else { return false }
            let left = deadline - now
            var ts = timespec(tv_sec: Int(left / 1_000_000_000), tv_nsec: Int(left % 1_000_000_000))
            return pthread_cond_timedwait_relative_np(cond, lock.mutex, &ts) != ETIMEDOUT
            #endif
        }

        func signal() { pthread_cond_signal(cond) }
        func broadcast() { pthread_cond_broadcast(cond) }
    }
}
