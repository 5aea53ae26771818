#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A value shared between threads, guarded by a pthread mutex.
///
/// Herald's one lock type, used instead of Synchronization's `Mutex`: on Linux `Mutex`
/// locks with futex(2) directly, which ThreadSanitizer does not model, so two accesses both
/// made under the same `Mutex` look unordered to it and the sanitizer run (scripts/sanitizers)
/// reports a race that is not there, or, suppressed, hides one that is. `pthread_mutex_lock`
/// is intercepted, so TSan sees every critical section here. Uncontended, it costs about
/// the same (one atomic exchange in, one out).
///
/// A class, so escaping closures and several owners can hold the same lock.
public final class Locked<Value>: @unchecked Sendable {  // every access to `value` holds `mutex`
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
    @usableFromInline var value: Value

    public init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value.
    @inlinable
    public func withLock<R, E: Error>(_ body: (inout Value) throws(E) -> R) throws(E) -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }

    /// A copy of the value.
    public func get() -> Value { withLock { $0 } }

    /// Replaces the value.
    public func set(_ newValue: Value) { withLock { $0 = newValue } }
}
