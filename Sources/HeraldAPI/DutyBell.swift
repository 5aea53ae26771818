import Foundation

/// How the API tells the duty runner of new work (a scheduled publish, a channel expiry)
/// before its next poll: `ring` from any thread; the runner's `wait` returns early.
public final class DutyBell: @unchecked Sendable {
    // @unchecked: `rung` is guarded by `cond`.
    let cond = NSCondition()
    var rung = false

    public init() {}

    /// Wakes the runner (any thread, never blocks for long).
    public func ring() {
        cond.lock()
        rung = true
        cond.signal()
        cond.unlock()
    }

    /// Waits until `deadline` or a ring (the runner's thread). True: rung.
    @discardableResult
    public func wait(until deadline: Date) -> Bool {
        cond.lock()
        defer { cond.unlock() }
        while !rung {
            if !cond.wait(until: deadline) { break }
        }
        let r = rung
        rung = false
        return r
    }
}
