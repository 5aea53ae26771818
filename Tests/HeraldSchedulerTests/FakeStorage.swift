import Foundation
import HeraldAPNS
import HeraldCore

@testable import HeraldStore

/// The storage protocols in memory: a second backend, so the fan-out runs without SQLite.
/// Publishes go through `PublishRule` as on SQLite. Queued writes (`markSending`,
/// `checkpoint`, the queued `finishEvent`) wait in `queue` until `commit()` applies them in
/// order, as SQLite's writer would; `crash()` loses them. A blocking write first commits
/// what is queued (one writer, in order). With `failing`, every write is refused.
final class FakeStorage: FanoutStorage, @unchecked Sendable {
    // @unchecked: every field is behind `state`'s lock.
    struct Sub {
        var registeredAtMillis: Int64
        var expiresAt: Int64?
    }

    struct State {
        var channels: [Int64: Channel] = [:]
        var subs: [Int64: [SubscriptionKind: [[UInt8]: Sub]]] = [:]
        var events: [String: EventRecord] = [:]
        var keys: [Int64: [String: String]] = [:]  // channel → idempotency key → event id
        var queue: [(job: (inout State) -> Void, completion: @Sendable (Error?) -> Void)] = []
        var failing = false
        var nextNum: Int64 = 0
        var nextEvent = 0
        /// Every checkpoint written, in order (event id, cursor).
        var checkpoints: [(String, [UInt8])] = []
        /// Set: leases are shared (as on PostgreSQL), with this validity and these shards.
        var shared: SharedLease?
    }

    /// A shared lease as a PostgreSQL backend grants it, and what the test makes of it.
    struct SharedLease {
        var shards: ShardSet = .all
        var validFor: Double = 10
        /// Another worker holds it now: renewals come back empty, fenced writes fail.
        var lost = false
        /// Renewals throw (the database unreachable).
        var renewFails = false
        var renewals = 0
        var released: [Lease] = []
        /// What the other workers stored of the pruning guard's tally (nil: every other
        /// shard started, nothing answered), how often it was read, and the trips recorded.
        var others: PruneGuardTally?
        var guardReads = 0
        var trips: [String] = []
        /// Another worker's trip of the same event lands between this worker's read of the
        /// tally and its own record of the trip (two trip at once): the record finds it set.
        var tripStoredFirstElsewhere = false
        /// Shards no worker has started the events on (their progress reads as new), as
        /// a dead worker's that never checkpointed.
        var fresh: ShardSet = .empty
        /// Calls of `renewLeases` (each renews one or more channels).
        var renewalCalls = 0
    }

    let clock: WallClock
    let state = Locked(State())
    /// While true every scan throws (the database unreachable); `scans` counts the calls.
    let scanOutage = Locked(false)
    let scans = Locked(0)

    init(clock: WallClock) { self.clock = clock }

    // MARK: - the writer

    /// Applies the queued writes in order and runs their completions (outside the lock).
    func commit() {
        let (jobs, failing) = state.withLock { s -> ([(job: (inout State) -> Void, completion: @Sendable (Error?) -> Void)], Bool) in
            let q = s.queue
            s.queue.removeAll()
            if !s.failing { for j in q { j.job(&s) } }
            return (q, s.failing)
        }
        for j in jobs { j.completion(failing ? StoreError.unavailable("disk full") : nil) }
    }

    /// The process died: queued writes are lost.
    func crash() { state.withLock { $0.queue.removeAll() } }

    var failing: Bool {
        get { state.withLock { $0.failing } }
        set { state.withLock { $0.failing = newValue } }
    }

    var queuedWrites: Int { state.withLock { $0.queue.count } }
    var checkpointsWritten: [(String, [UInt8])] { state.withLock { $0.checkpoints } }

    func enqueue(_ job: @escaping (inout State) -> Void, _ completion: @escaping @Sendable (Error?) -> Void) {
        state.withLock { $0.queue.append((job, completion)) }
    }

    /// A blocking write: after everything queued, or refused.
    func write<T>(_ body: (inout State) throws -> T) throws -> T {
        commit()
        return try state.withLock { s in
            if s.failing { throw StoreError.unavailable("disk full") }
            return try body(&s)
        }
    }

    func read<T>(_ body: (State) throws -> T) rethrows -> T { try state.withLock { try body($0) } }

    // MARK: - Registry

    func createChannel(
        id: String, bundleID: String, mode: ChannelMode, environment: APNSEnvironment, storagePolicy: StoragePolicy,
        apnsChannelID: String?, settings: ChannelSettings
    ) throws -> Channel {
        let now = clock.nowMillis()
        return try write { s in
            if s.channels.values.contains(where: { $0.id == id }) { throw StoreError.channelExists(id) }
            s.nextNum += 1
            let ch = Channel(
                num: s.nextNum, id: id, bundleID: bundleID, mode: mode, environment: environment, storagePolicy: storagePolicy,
                apnsChannelID: apnsChannelID, isOpen: true, lifecycle: .idle, lastSeq: 0, lastTimestamp: 0, currentEvent: nil,
                catchUp: settings.catchUp, minIntervalMillis: settings.minIntervalMillis,
                priority10BudgetPerHour: settings.priority10BudgetPerHour, createdAtMillis: now, closedAtMillis: nil)
            s.channels[ch.num] = ch
            return ch
        }
    }

    func channel(id: String) throws -> Channel? { read { s in s.channels.values.first { $0.id == id } } }
    func channel(num: Int64) throws -> Channel? { read { $0.channels[num] } }
    func channels() throws -> [Channel] { read { $0.channels.values.sorted { $0.id < $1.id } } }

    func closeChannel(id: String) throws -> (Channel, [String]) {
        let now = clock.nowMillis()
        return try write { s in
            guard var ch = s.channels.values.first(where: { $0.id == id }) else { throw StoreError.channelNotFound(id) }
            guard ch.isOpen else { return (ch, []) }
            ch.isOpen = false
            ch.closedAtMillis = now
            s.channels[ch.num] = ch
            s.subs[ch.num] = nil
            var stopped: [String] = []
            for (eid, e) in s.events where e.channelNum == ch.num && !e.state.isFinished {
                stopped.append(eid)
                s.events[eid]?.state = .failed
                s.events[eid]?.failureReason = "channel_closed"
                s.events[eid]?.finishedAtMillis = now
            }
            return (ch, stopped)
        }
    }

    func setAPNSChannelID(channelNum: Int64, _ apnsID: String?) throws {
        try write { s in s.channels[channelNum]?.apnsChannelID = apnsID }
    }

    func live(_ s: State, _ num: Int64, _ kind: SubscriptionKind, now: Int64) -> [([UInt8], Sub)] {
        (s.subs[num]?[kind] ?? [:]).filter { $0.value.expiresAt.map { $0 > now } ?? true }.map { ($0.key, $0.value) }
    }

    func subscriberCounts(channelNum: Int64) throws -> (activity: Int64, pushToStart: Int64) {
        let now = clock.nowSeconds()
        return read { s in
            (Int64(live(s, channelNum, .activity, now: now).count), Int64(live(s, channelNum, .pushToStart, now: now).count))
        }
    }

    func openChannel(_ s: State, _ id: String) throws -> Channel {
        guard let ch = s.channels.values.first(where: { $0.id == id }) else { throw StoreError.channelNotFound(id) }
        guard ch.isOpen else { throw StoreError.channelClosed(id) }
        return ch
    }

    func register(
        channelID: String, token: [UInt8], kind: SubscriptionKind, replaces: [UInt8]?, expiresAt: Int64?
    ) throws -> (Subscription, created: Bool, channel: Channel) {
        let now = clock.nowMillis()
        return try write { s in
            let ch = try openChannel(s, channelID)
            if let old = replaces, old != token {
                for k in SubscriptionKind.allCases { s.subs[ch.num, default: [:]][k]?[old] = nil }
            }
            let created = s.subs[ch.num]?[kind]?[token] == nil
            s.subs[ch.num, default: [:]][kind, default: [:]][token] = Sub(registeredAtMillis: now, expiresAt: expiresAt)
            return (
                Subscription(channelID: channelID, token: token, kind: kind, registeredAtMillis: now, expiresAt: expiresAt), created, ch
            )
        }
    }

    func unregister(channelID: String, token: [UInt8]) throws {
        try write { s in
            guard let ch = s.channels.values.first(where: { $0.id == channelID }) else { throw StoreError.channelNotFound(channelID) }
            var found = false
            for k in SubscriptionKind.allCases where s.subs[ch.num]?[k]?.removeValue(forKey: token) != nil { found = true }
            if !found { throw StoreError.subscriptionNotFound }
        }
    }

    func batch(channelID: String, subscribe: [SubscriptionInput], unsubscribe: [[UInt8]]) throws -> BatchResult {
        let now = clock.nowMillis()
        return try write { s in
            let ch = try openChannel(s, channelID)
            var r = BatchResult()
            for i in subscribe {
                if s.subs[ch.num]?[i.kind]?[i.token] == nil {
                    r.subscribed += 1
                    if i.kind == .activity { r.joined.append(i.token) }
                } else {
                    r.updated += 1
                }
                s.subs[ch.num, default: [:]][i.kind, default: [:]][i.token] = Sub(registeredAtMillis: now, expiresAt: i.expiresAt)
            }
            for t in unsubscribe {
                for k in SubscriptionKind.allCases where s.subs[ch.num]?[k]?.removeValue(forKey: t) != nil { r.unsubscribed += 1 }
            }
            let removed = Set(unsubscribe)
            r.joined.removeAll { removed.contains($0) }
            r.channel = ch
            return r
        }
    }

    func prune(channelNum: Int64, _ items: [(kind: SubscriptionKind, token: [UInt8], beforeMillis: Int64)]) throws -> Int {
        try write { s in
            var n = 0
            for i in items {
                if let sub = s.subs[channelNum]?[i.kind]?[i.token], sub.registeredAtMillis < i.beforeMillis {
                    s.subs[channelNum]?[i.kind]?[i.token] = nil
                    n += 1
                }
            }
            return n
        }
    }

    /// The sweeps run on a background queue at their own time: they change nothing a test
    /// depends on, and do not commit the queue (so a test's run stays the same run).
    func sweepExpiredSubscriptions(limit: Int) throws -> Int {
        let now = clock.nowSeconds()
        return state.withLock { s in
            var n = 0
            for (num, kinds) in s.subs {
                for (k, subs) in kinds {
                    for (t, sub) in subs where n < limit && (sub.expiresAt.map { $0 <= now } ?? false) {
                        s.subs[num]?[k]?[t] = nil
                        n += 1
                    }
                }
            }
            return n
        }
    }

    func subscriptionTotals() throws -> (activity: Int64, pushToStart: Int64) {
        read { s in
            var a: Int64 = 0
            var p: Int64 = 0
            for kinds in s.subs.values {
                a += Int64(kinds[.activity]?.count ?? 0)
                p += Int64(kinds[.pushToStart]?.count ?? 0)
            }
            return (a, p)
        }
    }

    func countSubscriptions(channelNum: Int64, kind: SubscriptionKind) throws -> Int64 {
        let now = clock.nowSeconds()
        return read { s in Int64(live(s, channelNum, kind, now: now).count) }
    }

    func makeScanner() throws -> SubscriptionScan { FakeScanner(storage: self) }

    // MARK: - EventLog

    func publish(channelID: String, event: LiveActivityEvent, idempotencyKey: String?, dryRun: Bool) throws -> PublishResult {
        let now = clock.nowMillis()
        return try write { s in
            guard let ch = s.channels.values.first(where: { $0.id == channelID }) else { throw StoreError.channelNotFound(channelID) }
            let keyed = idempotencyKey.flatMap { s.keys[ch.num]?[$0] }.flatMap { s.events[$0] }
                .map { PublishRule.KeyedEvent(id: $0.id, createdAtMillis: $0.createdAtMillis) }
            switch try PublishRule.decide(channel: ch, event: event, existing: dryRun ? nil : keyed, nowMillis: now) {
            case .replay(let id): return PublishResult(event: s.events[id]!, created: false, targets: 0, limit: 0, channel: ch)
            case .accept(let a):
                s.nextEvent += 1
                let record = a.record(id: "evt_\(s.nextEvent)", channel: ch, event: event, createdAtMillis: now)
                if dryRun { return PublishResult(event: record, created: true, targets: 0, limit: a.limit, channel: ch) }
                s.events[record.id] = record
                if let k = idempotencyKey { s.keys[ch.num, default: [:]][k] = record.id }
                var next = ch
                next.lastSeq = record.seq
                next.lastTimestamp = record.apsTimestamp
                next.lifecycle = a.lifecycle
                next.currentEvent = a.becomesCurrent ? record.id : nil
                s.channels[ch.num] = next
                return PublishResult(event: record, created: true, targets: 0, limit: a.limit, channel: ch)
            }
        }
    }

    func event(channelID: String, eventID: String) throws -> EventRecord {
        guard let e = read({ $0.events[eventID] }), e.channelID == channelID else { throw StoreError.eventNotFound(eventID) }
        return e
    }

    func event(id: String) throws -> EventRecord? { read { $0.events[id] } }

    func lastEvent(channelNum: Int64) throws -> EventRecord? {
        read { s in s.events.values.filter { $0.channelNum == channelNum }.max { $0.seq < $1.seq } }
    }

    func unfinishedEvents() throws -> [EventRecord] {
        read { s in
            s.events.values.filter { !$0.state.isFinished }.sorted { ($0.channelNum, $0.seq) < ($1.channelNum, $1.seq) }
        }
    }

    func unfinishedEvents(channelNum: Int64, afterSeq: Int64, throughSeq: Int64) throws -> [EventRecord] {
        try unfinishedEvents().filter { $0.channelNum == channelNum && $0.seq > afterSeq && $0.seq <= throughSeq }
    }

    func lastFinishedSeq(channelNum: Int64) throws -> Int64 {
        read { s in s.events.values.filter { $0.channelNum == channelNum && $0.state.isFinished }.map(\.seq).max() ?? 0 }
    }

    func markSending(
        eventID: String, shards: ShardSet, targets: Int64, passStart: [UInt8], priority: Int,
        completion: @escaping @Sendable (Error?) -> Void
    ) {
        let now = clock.nowMillis()
        enqueue(
            { s in
                guard var e = s.events[eventID] else { return }
                e.state = .sending
                e.startedAtMillis = e.startedAtMillis ?? now
                e.counters.targets = targets
                e.passStart = passStart
                e.cursor = e.cursor ?? passStart
                e.priority = priority
                s.events[eventID] = e
            }, completion)
    }

    func checkpoint(
        eventID: String, shards: ShardSet, cursor: [UInt8], wrapped: Bool, counters: EventCounters,
        completion: @escaping @Sendable (Error?) -> Void
    ) {
        if let l = shared, l.lost, let e = state.withLock({ $0.events[eventID] }) {
            // Fenced: written under a lease another worker holds now.
            completion(LeaseLost(channelNum: e.channelNum))
            return
        }
        enqueue(
            { s in
                guard var e = s.events[eventID], e.state == .sending else { return }
                e.cursor = cursor
                e.wrapped = wrapped
                let targets = e.counters.targets
                e.counters = counters
                e.counters.targets = targets
                s.events[eventID] = e
                s.checkpoints.append((eventID, cursor))
            }, completion)
    }

    static func finishJob(_ eventID: String, _ state: EventState, _ counters: EventCounters, _ reason: String?, _ by: String?, _ now: Int64)
        -> (inout State) -> Void
    {
        { s in
            guard var e = s.events[eventID], !e.state.isFinished else { return }
            e.state = state
            e.finishedAtMillis = now
            e.failureReason = reason
            e.supersededBy = by
            let targets = max(e.counters.targets, counters.targets)
            e.counters = counters
            e.counters.targets = targets
            s.events[eventID] = e
        }
    }

    func finishEvent(
        eventID: String, shards: ShardSet, state: EventState, counters: EventCounters, reason: String?, supersededBy: String?,
        completion: @escaping @Sendable (Error?) -> Void
    ) {
        enqueue(Self.finishJob(eventID, state, counters, reason, supersededBy, clock.nowMillis()), completion)
    }

    func finishEvent(
        eventID: String, shards: ShardSet, state: EventState, counters: EventCounters, reason: String?, supersededBy: String?
    ) throws {
        let job = Self.finishJob(eventID, state, counters, reason, supersededBy, clock.nowMillis())
        try write { s in job(&s) }
    }

    func setBroadcastState(eventID: String, state: BroadcastState, reason: String?) throws {
        try write { s in
            s.events[eventID]?.broadcastState = state
            s.events[eventID]?.broadcastReason = reason
        }
    }

    func sweepEvents(olderThanMillis: Int64) throws -> Int {
        let now = clock.nowMillis()
        return state.withLock { s in
            let current = Set(s.channels.values.compactMap(\.currentEvent))
            let old = s.events.values.filter {
                $0.state.isFinished && $0.createdAtMillis < now - olderThanMillis && !current.contains($0.id)
            }
            for e in old { s.events[e.id] = nil }
            return old.count
        }
    }

    // MARK: - Leases

    func acquireLease(channelNum: Int64) throws -> Lease? {
        state.withLock { s in
            guard let l = s.shared else { return Lease(channelNum: channelNum, shards: .all) }
            return l.lost ? nil : Lease(channelNum: channelNum, shards: l.shards, validFor: l.validFor)
        }
    }

    func releaseLease(_ lease: Lease) { state.withLock { $0.shared?.released.append(lease) } }

    func renewLease(_ lease: Lease) throws -> Lease? {
        let l = state.withLock { s -> SharedLease? in
            s.shared?.renewals += 1
            return s.shared
        }
        guard let l else { return lease }
        if l.renewFails { throw StoreError.unavailable("down") }
        return l.lost ? nil : Lease(channelNum: lease.channelNum, shards: l.shards, validFor: l.validFor)
    }

    /// Shared leases have a feed (none ever arrives here: the engine polls).
    func watchEvents(_ notice: @escaping @Sendable (FeedNotice) -> Void) -> (@Sendable () -> Void)? {
        guard shared != nil else { return nil }
        return {}
    }

    var shared: SharedLease? {
        get { state.withLock { $0.shared } }
        set { state.withLock { $0.shared = newValue } }
    }
}

/// Token order over the fake's subscriptions (bytes compared as SQLite compares BLOBs).
final class FakeScanner: SubscriptionScan {
    let storage: FakeStorage
    init(storage: FakeStorage) { self.storage = storage }

    func next(
        channelNum: Int64, kind: SubscriptionKind, shards: ShardSet, after: [UInt8], before: [UInt8]?, now: Int64, limit: Int
    ) throws -> TokenRows {
        storage.scans.withLock { $0 += 1 }
        if storage.scanOutage.withLock({ $0 }) { throw StoreError.unavailable("PostgreSQL unreachable") }
        return storage.read { s in
            let rows = storage.live(s, channelNum, kind, now: now)
                .filter { row in
                    after.lexicographicallyPrecedes(row.0) && (before.map { b in !b.lexicographicallyPrecedes(row.0) } ?? true)
                }
                .filter { shards.holds(token: $0.0) }
                .sorted { $0.0.lexicographicallyPrecedes($1.0) }
                .prefix(limit).map(\.0)
            return TokenRows(rows)
        }
    }
}
