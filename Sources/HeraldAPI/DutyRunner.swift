import Foundation
import HeraldAPNS
import HeraldCore
import HeraldFanout
import HeraldStore

/// The shell around `DutyPlan`: one thread that, while this worker holds the database's
/// duty lock (`Schedules.makeDutyLock`), releases due scheduled events to the fan-out (told
/// as of a fresh publish), ends and closes expired channels (through
/// `APIServer.closeChannel(id:why:)`, the path `DELETE` takes) and sweeps expired
/// subscriptions. Without the lock it retries taking it every `DutyPlan.lockRetryMillis`.
public final class DutyRunner: @unchecked Sendable {
    // @unchecked: `plan`, `holding` and `lock` are confined to the runner thread (and to
    // `start`/`stop`, which run before it starts and after it ended); `stopping` is atomic
    // behind `stopLock`.
    let api: APIServer
    let store: any HeraldStorage
    let engine: FanoutEngine
    let logger: Logger
    let clock: WallClock
    var plan: DutyPlan
    var lock: DutyLock?
    var holding = false
    let stopLock = Locked(false)
    private var thread: Thread?
    private let finished = DispatchSemaphore(value: 0)
    let released: [String: Counter]
    let expired: Counter
    let held: Gauge

    /// Due events handled per turn at most (the rest in the next turn, at once).
    static let dueLimit = 500

    public init(api: APIServer, plan: DutyPlan = DutyPlan(), metrics: MetricsRegistry, logger: Logger) {
        self.api = api
        store = api.store
        engine = api.engine
        self.plan = plan
        self.logger = logger.with(subsystem: "duty")
        clock = api.store.clock
        var r: [String: Counter] = [:]
        for result in ["sent", "failed", "superseded"] {
            r[result] = metrics.counter(
                "herald_schedule_released_total", help: "Scheduled events released when due, by what they became.",
                labels: ["result": result])
        }
        released = r
        expired = metrics.counter("herald_channels_expired_total", help: "Channels closed because their expires_at came.")
        held = metrics.gauge("herald_duty_lock_held", help: "1 while this worker holds the database's duty lock.")
    }

    /// Starts the thread. Throws what opening the lock throws.
    public func start() throws {
        lock = try store.makeDutyLock()
        let finished = self.finished
        let t = Thread { [weak self] in
            ThreadName.set("duty")
            self?.run()
            finished.signal()
        }
        t.name = "duty"
        thread = t
        t.start()
    }

    /// Stops the thread after its current turn and gives the lock back.
    public func stop() {
        let was = stopLock.withLock { s in
            defer { s = true }
            return !s
        }
        guard was, thread != nil else { return }
        api.dutyBell.ring()
        finished.wait()
        lock?.release()
        held.set(0)
    }

    var stopping: Bool { stopLock.withLock { $0 } }

    private func run() {
        while !stopping {
            let wake = turn()
            api.dutyBell.wait(until: Date(timeIntervalSince1970: Double(wake) / 1000))
        }
    }

    /// One turn: the lock, what is due, the actions. Returns when to wake (unix ms).
    func turn() -> Int64 {
        guard let lock, lock.hold() else {
            if holding {
                holding = false
                held.set(0)
                plan.lockLost()
                logger.warning("duty.lock_lost")
            }
            return clock.nowMillis() + plan.lockRetryMillis
        }
        if !holding {
            holding = true
            held.set(1)
            logger.info("duty.lock_taken")
        }
        let now = clock.nowMillis()
        do {
            let nowS = now / 1000
            let nextSendAt = try store.nextScheduledAt()
            let nextExpiry = try store.nextChannelExpiry()
            let due = nextSendAt.map { $0 <= nowS } == true ? try store.dueScheduled(atOrBefore: nowS, limit: Self.dueLimit) : []
            let channels = nextExpiry.map { $0 <= nowS } == true ? try store.expiringChannels(atOrBefore: nowS, limit: 100) : []
            let expiring = try channels.map { ch in
                DutyPlan.ExpiringChannel(
                    id: ch.id, expiresAt: ch.expiresAt ?? nowS, lifecycle: ch.lifecycle,
                    lastEvent: try lastSent(ch).map { ($0.kind, $0.state) })
            }
            let (actions, wake) = plan.plan(nowMillis: now, due: due, expiring: expiring, nextSendAt: nextSendAt, nextExpiry: nextExpiry)
            for a in actions { perform(a) }
            return due.count >= Self.dueLimit ? clock.nowMillis() : wake
        } catch {
            logger.warning("duty.turn_failed", ["error": .string("\(error)")])
            return now + plan.lockRetryMillis
        }
    }

    /// The channel's newest event that went out or is going out (not scheduled, cancelled).
    func lastSent(_ ch: Channel) throws -> EventRecord? {
        try store.events(channelID: ch.id, state: nil, beforeSeq: nil, limit: 50).first { $0.state != .scheduled && $0.state != .cancelled }
    }

    func perform(_ a: DutyPlan.Action) {
        do {
            switch a {
            case .release(let id): try release(id)
            case .endActivity(let id): try endActivity(id)
            case .close(let id):
                try api.closeChannel(id: id, why: .expired)
                expired.inc()
            case .sweepSubscriptions:
                let n = try store.sweepExpiredSubscriptions(limit: 100_000)
                if n > 0 { logger.info("duty.subscriptions_swept", ["subscriptions": .int(Int64(n))]) }
            }
        } catch {
            logger.warning("duty.action_failed", ["action": .string("\(a)"), "error": .string("\(error)")])
        }
    }

    func release(_ id: String) throws {
        switch try store.release(eventID: id) {
        case .sent(let e, let ch):
            engine.notifyCommitted(e, channel: ch)
            released["sent"]?.inc()
            logger.info("duty.event_released", ["channel": .string(ch.id), "event_id": .string(id), "seq": .int(e.seq)])
        case .refused(let e):
            released[e.state == .superseded ? "superseded" : "failed"]?.inc()
            logger.info(
                "duty.event_refused",
                [
                    "channel": .string(e.channelID), "event_id": .string(id), "state": .string(e.state.rawValue),
                    "reason": e.failureReason.map { .string($0) } ?? .null,
                ])
        case .notScheduled: break
        }
    }

    /// Publishes the `end` of an expiring channel whose activity runs (`ExpiryEnd`); the
    /// channel closes on a later turn, once it went out. An end that cannot be made or
    /// published for good (too large, refused) closes the channel at once.
    func endActivity(_ id: String) throws {
        guard let ch = try store.channel(id: id), ch.isOpen else { return }
        let state = try lastSent(ch).flatMap { ExpiryEnd.contentState(payload: $0.payload) }
        do {
            let event = try ExpiryEnd.event(contentState: state, nowSeconds: clock.nowSeconds())
            let r = try store.publish(channelID: id, event: event, idempotencyKey: nil, dryRun: false)
            engine.notifyCommitted(r.event, channel: r.channel)
            logger.info("duty.channel_ending", ["channel": .string(id), "event_id": .string(r.event.id)])
        } catch let e as StoreError where e.status == 503 {
            throw e
        } catch {
            logger.warning("duty.end_failed", ["channel": .string(id), "error": .string("\(error)")])
            try api.closeChannel(id: id, why: .expired)
            expired.inc()
        }
    }
}
