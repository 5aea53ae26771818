import HeraldAPNS
import HeraldCore
import HeraldNet
import Synchronization

/// Receives the final result of each request. Called on the pool's loop thread: must
/// not block (record and return).
public protocol APNSResultSink: AnyObject, Sendable {
    func apnsCompleted(_ request: APNSRequest, result: APNSResult)
    /// The final results one turn of the pool's loop reached for this sink, in the order
    /// reached (one read brings in hundreds of answers): a sink that takes a lock per call
    /// takes it once for all of them. The default calls `apnsCompleted(_:result:)` for each.
    func apnsCompleted(_ batch: ArraySlice<APNSCompletion>)
}

extension APNSResultSink {
    public func apnsCompleted(_ batch: ArraySlice<APNSCompletion>) {
        // Through the buffer: each result is passed borrowed, not copied.
        batch.withUnsafeBufferPointer { p in
            for i in p.indices { apnsCompleted(p[i].request, result: p[i].result) }
        }
    }
}

/// One request's final result, as a batch hands it to its sink.
public struct APNSCompletion: Sendable {
    public let request: APNSRequest
    public let result: APNSResult

    public init(request: APNSRequest, result: APNSResult) {
        self.request = request
        self.result = result
    }
}

/// The final result of one request after the pool's retries.
public enum APNSResult: Sendable {
    /// APNs answered and the answer is final (delivered, drop token, fail...).
    case outcome(PushOutcome, HTTP2Response?)
    /// Retries ran out; the last retryable outcome.
    case exhausted(PushOutcome)
    /// The template was cancelled before the request was (re)sent.
    case cancelled

    /// True for a delivery (read in place: a sink that only counts them copies no outcome).
    public var isDelivered: Bool {
        switch self {
        case .outcome(.delivered, _): true
        default: false
        }
    }
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
/// the caller reads `attempts` in its sink, which runs there too. Once its sink has been
/// called the pool is done with it: its owner may then `reuse` it (`APNSRequestStock`),
/// ordered after the sink by whatever carried it back (the fan-out's inbox lock).
public final class APNSRequest: @unchecked Sendable {
    /// The `:path`'s bytes (a buffer kept across reuses: a token push writes its path here
    /// instead of allocating a String).
    public internal(set) var pathBytes: [UInt8]
    public internal(set) var headers: HeaderList
    public internal(set) var template: APNSTemplate
    /// The caller's own data (e.g. its batch) and index, handed back in the sink.
    public internal(set) var context: AnyObject?
    public internal(set) var index: Int
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
    /// In an `APNSRequestStock`, waiting for reuse (not counted in `live`).
    var stocked = false

    /// The `:path` (made on each call; the pool sends `pathBytes`).
    public var path: String { String(decoding: pathBytes, as: UTF8.self) }

    /// Requests alive in this process and not waiting in a stock for reuse (a fan-out that
    /// keeps them after their answer leaks; tests check this returns to its baseline).
    /// Counted in debug builds only: in a release build it is always 0, because one
    /// process-wide atomic touched by the producer's thread and the pool's loop for every
    /// push bounces a cache line between the two cores.
    public static var live: Int { liveCount.load(ordering: .relaxed) }
    private static let liveCount = Atomic<Int>(0)

    #if DEBUG
    deinit { if !stocked { Self.liveCount.subtract(1, ordering: .relaxed) } }
    #endif

    @inline(__always)
    static func countLive(_ delta: Int) {
        #if DEBUG
        liveCount.add(delta, ordering: .relaxed)
        #endif
    }

    public init(path: String, headers: HeaderList = HeaderList(), template: APNSTemplate, context: AnyObject? = nil, index: Int = 0) {
        Self.countLive(1)
        self.pathBytes = Array(path.utf8)
        self.headers = headers
        self.template = template
        self.context = context
        self.index = index
    }

    /// A token push to the raw device `token` (`/3/device/<hex>`).
    public convenience init(token: [UInt8], template: APNSTemplate, context: AnyObject? = nil, index: Int = 0) {
        self.init(path: "", template: template, context: context, index: index)
        APNSRequests.writeTokenPath(token, into: &pathBytes)
    }

    /// As above, the token's bytes lent by the caller (copied into the path).
    convenience init(token: UnsafeBufferPointer<UInt8>, template: APNSTemplate, context: AnyObject?, index: Int) {
        self.init(path: "", template: template, context: context, index: index)
        APNSRequests.writeTokenPath(token, into: &pathBytes)
    }

    /// Makes this answered request a fresh token push to `token`: every field as after
    /// `init(token:template:context:index:)`, the path written into the kept buffer. Only by
    /// its owner, after its sink was called (the pool no longer reads it).
    func reuse(token: UnsafeBufferPointer<UInt8>, template: APNSTemplate, context: AnyObject?, index: Int) {
        APNSRequests.writeTokenPath(token, into: &pathBytes)
        if headers.count > 0 { headers = HeaderList() }
        // A fan-out reuses a request for the same event's next token: no retain and release.
        if self.template !== template { self.template = template }
        self.context = context
        self.index = index
        attempts = 0
        refusals = 0
        tokenRefreshed = false
        sentAt = 0
        sentAtMillis = 0
        lastRetryable = nil
        express = false
    }
}

/// Answered requests kept by one thread (the fan-out's engine, a benchmark's driver) for
/// its next token pushes, so a push allocates no request object and no path once the
/// stock is warm (issue #12: nothing per push that can be allocated once). A value owned
/// by that thread; not thread-safe. Bounded: past `limit` a returned request is freed.
public struct APNSRequestStock {
    private var spare: [APNSRequest] = []
    /// Requests kept at most.
    public let limit: Int

    public init(limit: Int = 8192) { self.limit = limit }

    /// Requests waiting for reuse.
    public var count: Int { spare.count }

    /// A token push to `token`: a reused request when the stock has one.
    public mutating func take(token: [UInt8], template: APNSTemplate, context: AnyObject? = nil, index: Int = 0) -> APNSRequest {
        token.withUnsafeBufferPointer { take(token: $0, template: template, context: context, index: index) }
    }

    /// As above, the token's bytes lent in place (a scan batch's, `TokenRows.withToken`).
    public mutating func take(
        token: UnsafeBufferPointer<UInt8>, template: APNSTemplate, context: AnyObject? = nil, index: Int = 0
    ) -> APNSRequest {
        guard let r = spare.popLast() else { return APNSRequest(token: token, template: template, context: context, index: index) }
        r.stocked = false
        APNSRequest.countLive(1)
        r.reuse(token: token, template: template, context: context, index: index)
        return r
    }

    /// Keeps `r` for reuse. Only once its sink was called, and on the owner's thread after
    /// that (the pool is done with it then); nothing else may keep it.
    public mutating func put(_ r: APNSRequest) {
        guard spare.count < limit, !r.stocked else { return }
        r.stocked = true
        APNSRequest.countLive(-1)
        // The caller's data is not kept alive by the stock (the template is, until reuse).
        r.context = nil
        spare.append(r)
    }
}
