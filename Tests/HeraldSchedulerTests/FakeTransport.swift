import HeraldAPNS
import HeraldCore
import HeraldFanout
import HeraldNet

@testable import HeraldSender

/// A sender in memory: takes requests up to `capacity` in flight (all of a submission or
/// none, as the pool does), and answers them when the test says, through each request's
/// sink, as the pool's loop would. A request whose template was cancelled before it was
/// sent (`transmit`) comes back `cancelled` (the pool cancels what it has not sent); one
/// already sent is answered as APNs answers it. What was
/// delivered is kept per token, in order: what each device showed.
final class FakeTransport: PushTransport, @unchecked Sendable {
    // @unchecked: every field is behind `state`'s lock.
    struct State {
        var inFlight: [APNSRequest] = []
        /// Requests already written to APNs: a cancel no longer stops them.
        var sent = Set<ObjectIdentifier>()
        var submissions = 0
        var refusals = 0
        /// Payloads delivered, by path (`/3/device/<hex>` or the broadcast path).
        var delivered: [String: [[UInt8]]] = [:]
        /// Every request ever taken, in order (path, express, apns-priority).
        var log: [(path: String, express: Bool, priority: String?)] = []
    }

    let capacity: Int
    let clock: WallClock
    let state = Locked(State())

    init(capacity: Int = 1_000_000, clock: WallClock) {
        self.capacity = capacity
        self.clock = clock
    }

    func trySubmit(_ requests: [APNSRequest]) -> Bool {
        state.withLock { s in
            guard s.inFlight.count + requests.count <= capacity else {
                s.refusals += 1
                return false
            }
            s.inFlight += requests
            s.submissions += 1
            for r in requests {
                let priority = r.template.headers.value("apns-priority") ?? r.headers.value("apns-priority")
                s.log.append((r.path, r.express, priority))
            }
            return true
        }
    }

    var inFlight: Int { state.withLock { $0.inFlight.count } }
    var paths: [String] { state.withLock { $0.inFlight.map(\.path) } }
    var log: [(path: String, express: Bool, priority: String?)] { state.withLock { $0.log } }
    func delivered(_ token: [UInt8]) -> [[UInt8]] { state.withLock { $0.delivered[APNSRequests.tokenPath(Hex.encode(token))] ?? [] } }
    func delivered(path: String) -> [[UInt8]] { state.withLock { $0.delivered[path] ?? [] } }

    /// Answers up to `count` requests, oldest first, with what `outcome` says (delivered by
    /// default). `attempts` as the pool would report them after its retries.
    @discardableResult
    func answer(
        _ count: Int = .max, attempts: Int = 1,
        _ outcome: (APNSRequest) -> APNSResult = { _ in .outcome(.delivered(apnsID: nil, uniqueID: nil), nil) }
    ) -> Int {
        let taken = state.withLock { s -> [APNSRequest] in
            let n = min(count, s.inFlight.count)
            let t = Array(s.inFlight.prefix(n))
            s.inFlight.removeFirst(n)
            return t
        }
        complete(taken, attempts, outcome)
        return taken.count
    }

    /// Marks the first `count` requests in flight as written to APNs.
    func transmit(_ count: Int) {
        state.withLock { s in for r in s.inFlight.prefix(count) { s.sent.insert(ObjectIdentifier(r)) } }
    }

    private func complete(_ taken: [APNSRequest], _ attempts: Int, _ outcome: (APNSRequest) -> APNSResult) {
        for r in taken {
            let wasSent = state.withLock { $0.sent.remove(ObjectIdentifier(r)) != nil }
            let result: APNSResult = r.template.isCancelled && !wasSent ? .cancelled : outcome(r)
            r.attempts = attempts
            r.sentAtMillis = clock.nowMillis()
            if case .outcome(.delivered, _) = result {
                state.withLock { $0.delivered[r.path, default: []].append(r.template.body?.bytes ?? []) }
            }
            r.template.sink.apnsCompleted(r, result: result)
        }
    }

    /// The process died: what was in flight is never answered; those `reached` says were
    /// already on their way reach their device all the same.
    func forget(reached: (APNSRequest) -> Bool = { _ in false }) {
        state.withLock { s in
            for r in s.inFlight where s.sent.contains(ObjectIdentifier(r)) && reached(r) {
                s.delivered[r.path, default: []].append(r.template.body?.bytes ?? [])
            }
            s.inFlight.removeAll()
            s.sent.removeAll()
        }
    }

    /// Answers the requests `pick` chooses (by position among those in flight).
    func answer(where pick: (Int, APNSRequest) -> Bool, attempts: Int = 1, _ outcome: (APNSRequest) -> APNSResult) -> Int {
        let taken = state.withLock { s -> [APNSRequest] in
            var keep: [APNSRequest] = []
            var take: [APNSRequest] = []
            for (i, r) in s.inFlight.enumerated() {
                if pick(i, r) { take.append(r) } else { keep.append(r) }
            }
            s.inFlight = keep
            return take
        }
        complete(taken, attempts, outcome)
        return taken.count
    }
}
