import Foundation
import HeraldNet
import Testing

@Suite struct EventLoopTests {
    final class Canary {}

    @Test func runsTasksFromOtherThreadsInOrder() throws {
        let loop = try EventLoop(name: "test-loop")
        defer { loop.shutdown() }
        let done = DispatchSemaphore(value: 0)
        final class Seen: @unchecked Sendable { var values: [Int] = [] }  // touched on the loop only
        let seen = Seen()
        for i in 0..<100 { loop.executeUnchecked { seen.values.append(i) } }
        loop.execute { done.signal() }
        #expect(done.wait(timeout: .now() + 10) == .success)
        loop.executeUnchecked {
            #expect(seen.values == Array(0..<100))
            done.signal()
        }
        #expect(done.wait(timeout: .now() + 10) == .success)
    }

    /// A task queued after the loop ended can never run: it is released at once, with what
    /// it captured. Kept, a task capturing the loop (a DNS answer during a pool's shutdown)
    /// leaked the loop and its connection (LeakSanitizer, clean-clone CI run). (Whether the
    /// loop itself is freed is not asserted: its thread lets go of it a moment after
    /// `shutdown()` returns.)
    @Test func aTaskQueuedAfterShutdownIsReleasedWithWhatItCaptured() throws {
        weak var weakCanary: Canary?
        let loop = try EventLoop(name: "test-loop")
        loop.shutdown()
        do {
            let canary = Canary()
            weakCanary = canary
            loop.executeUnchecked {
                _ = canary
                _ = loop
            }  // a cycle if the loop kept it
        }
        #expect(weakCanary == nil, "the task (and what it captured) is still held")
    }
}
