import HeraldAPNS
import HeraldCore
import HeraldNet
import Synchronization

/// Receives the final result of each request. Called on the pool's loop thread: must
/// not block (record and return).
public protocol APNSResultSink: AnyObject, Sendable {
    func apnsCompleted(_ request: APNSRequest, result: APNSResult)
}

/// The final result of one request after the pool's retries.
public enum APNSResult: Sendable {
    /// APNs answered and the answer is final (delivered, drop token, fail...).
    case outcome(PushOutcome, HTTP2Response?)
    /// Retries ran out; the last retryable outcome.
    case exhausted(PushOutcome)
    /// The template was cancelled before the request was (re)sent.
    case cancelled
}

/// What every request of one event shares: method, fields, body (encoded once per event)
/// and the sink. Cancelling it stops requests not yet sent and retries not yet made (a
/// superseded event).
public final class APNSTemplate: Sendable {
    public let method: String
    public let headers: HeaderList
    public let body: HTTP2Body?
    public let sink: APNSResultSink
    /// Keep `apns-id`/`apns-unique-id` of successful answers (broadcasts and channel
    /// management log them; a million token pushes need not allocate them).
    public let keepResponseHeaders: Bool
    /// The pool gives each request of this template a fresh lower-case `apns-id` (reference
    /// §3.1) when it sends it — no per-request allocation by the caller.
    public let generatesAPNSID: Bool
    private let cancelledFlag = Atomic<Bool>(false)
    /// Monotonic nanoseconds after which its requests are no longer sent (0: none).
    private let deadline = Atomic<UInt64>(0)

    public init(
        method: String = "POST", headers: HeaderList, body: HTTP2Body?, sink: APNSResultSink, keepResponseHeaders: Bool = true,
        generatesAPNSID: Bool = false
    ) {
        self.method = method
        self.headers = headers
        self.body = body
        self.sink = sink
        self.keepResponseHeaders = keepResponseHeaders
        self.generatesAPNSID = generatesAPNSID
    }

    /// Stops requests of this template that have not been sent yet. Any thread.
    public func cancel() { cancelledFlag.store(true, ordering: .releasing) }
    /// True once cancelled, or once its deadline has passed.
    public var isCancelled: Bool {
        if cancelledFlag.load(ordering: .acquiring) { return true }
        let d = deadline.load(ordering: .relaxed)
        return d != 0 && Monotonic.nanos() >= d
    }

    /// Requests of this template not yet sent by `monotonicNanos` (`Monotonic.nanos()`) are
    /// not sent at all: they come back `.cancelled`, as after `cancel()`. The fan-out sets it
    /// to its lease's local deadline, so a worker that was stopped (SIGSTOP, a long pause)
    /// past it writes none of what it had queued for shards another worker holds now. Any
    /// thread; a later call moves it (a renewed lease).
    public func setDeadline(monotonicNanos: UInt64) { deadline.store(monotonicNanos, ordering: .relaxed) }
}

/// One request to APNs: a path, per-request fields, and the shared template.
///
/// `@unchecked Sendable`: after `submit` it is touched only on the pool's loop thread;
/// the caller reads `attempts` in its sink, which runs there too.
public final class APNSRequest: @unchecked Sendable {
    public let path: String
    public let headers: HeaderList
    public let template: APNSTemplate
    /// The caller's own data (e.g. its batch) and index, handed back in the sink.
    public let context: AnyObject?
    public let index: Int
    /// Times sent to APNs so far.
    public internal(set) var attempts = 0
    /// Times refused unprocessed (GOAWAY / REFUSED_STREAM): resent without counting.
    var refusals = 0
    var tokenRefreshed = false
    var sentAt: UInt64 = 0
    /// Wall-clock time of the latest attempt, ms since 1970 (a registration after it wins
    /// over a BadDeviceToken answer).
    public internal(set) var sentAtMillis: Int64 = 0
    var lastRetryable: PushOutcome?
    /// Sent ahead of every request without it that waits in the pool, and accepted by
    /// `trySubmit` up to a quarter past the pool's pending limit. The fan-out sets it for an
    /// event whose whole audience fits in one batch, so a gate change to 200 passengers is
    /// not queued behind a million-token fan-out. Set before submitting.
    public var express = false

    /// Requests alive in this process (a fan-out that keeps them after their answer leaks;
    /// tests check this returns to its baseline). Counted in debug builds only: in a
    /// release build it is always 0, because one process-wide atomic touched by the
    /// producer's thread and the pool's loop for every push bounces a cache line between
    /// the two cores.
    public static var live: Int { liveCount.load(ordering: .relaxed) }
    private static let liveCount = Atomic<Int>(0)

    #if DEBUG
    deinit { Self.liveCount.subtract(1, ordering: .relaxed) }
    #endif

    public init(path: String, headers: HeaderList = HeaderList(), template: APNSTemplate, context: AnyObject? = nil, index: Int = 0) {
        #if DEBUG
        Self.liveCount.add(1, ordering: .relaxed)
        #endif
        self.path = path
        self.headers = headers
        self.template = template
        self.context = context
        self.index = index
    }
}
