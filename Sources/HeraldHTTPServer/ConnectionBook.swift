/// Every open connection of one server and what it is doing, and the decision taken when a
/// new one is accepted: admit it, refuse it (per-address or global cap), or admit it and
/// reclaim the connection idle the longest. A value with no I/O: the callbacks in
/// `MHDCallbacks.swift` feed it events under `ServerCore.book`'s lock and carry out what it
/// returns (`shutdown(2)` of a reclaimed connection's socket, under that same lock).
///
/// Reclaiming prefers connections between requests (idle keep-alive, or never used), the
/// accepting worker's own first (it closes them as soon as it has finished accepting), the
/// longest idle first; it passes over one whose next request waits unread in its socket,
/// and takes one whose request is still arriving only when none is idle. A connection whose
/// handler runs or whose response is being sent is never reclaimed: `responding` and
/// `reclaim` exclude each other under the lock.
struct ConnectionBook {
    /// The caps this book enforces.
    struct Limits: Equatable {
        /// Connections open and not being reclaimed, at most. At it, a new connection gets
        /// in by reclaiming one; with none to reclaim it is refused.
        var maxConnections: Int
        /// Connections (reclaimed ones included, until closed) from one client address at
        /// most; 0: no cap.
        var perAddress: Int
        /// Reclaimed connections whose worker has not closed them yet, at most: each still
        /// holds a descriptor, so beyond this new connections are refused instead.
        var closingAllowance: Int
    }

    /// Why a connection was refused (a metrics label: closed set).
    enum RefusalReason: String, CaseIterable, Sendable {
        case perAddressLimit = "per_ip_limit"
        case connectionLimit = "connection_limit"
    }

    /// What a reclaimed connection was doing (a metrics label: closed set).
    enum ReclaimedPhase: String, CaseIterable, Sendable {
        /// Between requests: keep-alive after a response, or opened and silent.
        case idle
        /// Its request line was read; headers or body still arriving.
        case readingRequest = "reading_request"
    }

    /// A connection to close now: its socket is shut down while the book's lock is held,
    /// which is safe because libmicrohttpd closes a descriptor only after reporting the
    /// connection closed (`closed(_:)`, under the same lock).
    struct Reclaim: Equatable {
        var id: ConnectionID
        var socket: Int32
        var phase: ReclaimedPhase
    }

    enum Admission: Equatable {
        case admit(reclaiming: Reclaim?)
        case refuse(RefusalReason)
    }

    private enum State: Equatable { case idle, readingRequest, responding, reclaimed }

    private struct Record {
        var address: ClientAddress
        var socket: Int32
        /// The worker that owns it (libmicrohttpd handles a connection on one thread).
        var thread: WorkerThread
        var state: State
        /// Stamp of this record's current entry in `idleQueue` or `readingQueue`.
        var stamp: UInt64
    }

    let limits: Limits
    private var records: [ConnectionID: Record] = [:]
    private var perAddress: [ClientAddress: Int] = [:]
    /// Admitted by the accept policy on a worker, not yet reported opened by it (or never:
    /// libmicrohttpd may still drop it, which the worker's next admission notices).
    private var pending: [WorkerThread: ClientAddress] = [:]
    /// Idle connections by owning worker: a reclaim prefers the accepting worker's own,
    /// which that worker closes as soon as it has finished accepting; another worker may be
    /// slow to run on a loaded machine, and its reclaimed connections pile up meanwhile.
    private var idleQueues: [WorkerThread: StampQueue] = [:]
    private var readingQueue = StampQueue()
    private var nextStamp: UInt64 = 0
    /// Reclaimed and not yet closed.
    private(set) var closing = 0
    private(set) var refused: [RefusalReason: UInt64] = [:]
    private(set) var reclaimed: [ReclaimedPhase: UInt64] = [:]

    init(limits: Limits) {
        self.limits = limits
    }

    /// Connections the server holds now (reclaimed ones included until closed).
    var open: Int { records.count }

    /// Entries in the reclaim queues, stale ones included (bounded by the open connections).
    var queuedEntries: Int { idleQueues.values.reduce(0) { $0 + $1.count } + readingQueue.count }

    /// Connections whose request line is read and whose request is still arriving (O(n):
    /// for tests).
    var readingRequests: Int { records.values.filter { $0.state == .readingRequest }.count }

    /// Connections from `address` counted against its cap now.
    func count(from address: ClientAddress) -> Int { perAddress[address] ?? 0 }

    /// A connection from `address` was accepted on `thread`: admit or refuse it. An admitted
    /// one is counted at once (against both caps) until `opened` or the thread's next
    /// admission.
    ///
    /// `hasUnreadBytes(socket)` tells whether a connection idle by the book has bytes
    /// waiting in its socket that its worker has not read yet (a request that has just
    /// arrived): such a connection is passed over, at most `maxPassedOver` of them.
    mutating func admit(
        _ address: ClientAddress, on thread: WorkerThread, hasUnreadBytes: (Int32) -> Bool = { _ in false }
    ) -> Admission {
        if let stale = pending.removeValue(forKey: thread) { release(stale) }
        if limits.perAddress > 0 && count(from: address) >= limits.perAddress {
            refused[.perAddressLimit, default: 0] += 1
            return .refuse(.perAddressLimit)
        }
        var reclaim: Reclaim?
        if records.count + pending.count - closing >= limits.maxConnections {
            guard closing < limits.closingAllowance, let r = reclaimOldest(preferring: thread, hasUnreadBytes) else {
                refused[.connectionLimit, default: 0] += 1
                return .refuse(.connectionLimit)
            }
            reclaim = r
        }
        pending[thread] = address
        perAddress[address, default: 0] += 1
        return .admit(reclaiming: reclaim)
    }

    /// libmicrohttpd opened the connection admitted last on `thread`.
    mutating func opened(_ id: ConnectionID, from address: ClientAddress, socket: Int32, on thread: WorkerThread) {
        if let p = pending.removeValue(forKey: thread) {
            if p != address {
                release(p)
                perAddress[address, default: 0] += 1
            }
        } else {
            perAddress[address, default: 0] += 1
        }
        records[id] = Record(address: address, socket: socket, thread: thread, state: .idle, stamp: 0)
        enqueue(id, as: .idle)
    }

    /// A request line was read. False when the connection is being reclaimed.
    mutating func requestArrived(_ id: ConnectionID) -> Bool {
        guard let r = records[id], r.state != .reclaimed else { return false }
        enqueue(id, as: .readingRequest)
        return true
    }

    /// The handler is about to run, or a response is about to be queued. False when the
    /// connection is being reclaimed (then no handler runs); once true, the connection is
    /// not reclaimed until `requestEnded`.
    mutating func responding(_ id: ConnectionID) -> Bool {
        guard let r = records[id], r.state != .reclaimed else { return false }
        records[id]!.state = .responding
        return true
    }

    /// The request is over (answered, refused or abandoned). True when it ended because the
    /// connection was reclaimed. With `keepsOpen` false (the connection closes after this
    /// request) it is not idle: closing it would make no room.
    mutating func requestEnded(_ id: ConnectionID, keepsOpen: Bool = true) -> Bool {
        guard let r = records[id] else { return false }
        if r.state == .reclaimed { return true }
        if keepsOpen {
            enqueue(id, as: .idle)
        } else {
            records[id]!.state = .responding
        }
        return false
    }

    /// libmicrohttpd closed the connection (its descriptor is closed right after).
    mutating func closed(_ id: ConnectionID) {
        guard let r = records.removeValue(forKey: id) else { return }
        if r.state == .reclaimed { closing -= 1 }
        release(r.address)
        if idleQueues[r.thread]?.count == 0 { idleQueues[r.thread] = nil }
    }

    private mutating func release(_ address: ClientAddress) {
        let n = (perAddress[address] ?? 0) - 1
        perAddress[address] = n > 0 ? n : nil
    }

    private mutating func enqueue(_ id: ConnectionID, as state: State) {
        nextStamp += 1
        records[id]!.state = state
        records[id]!.stamp = nextStamp
        let entry = StampQueue.Entry(stamp: nextStamp, id: id)
        let records = self.records  // shared storage, read only while the queue is out
        switch state {
        case .idle:
            let thread = records[id]!.thread
            var q = idleQueues.removeValue(forKey: thread) ?? StampQueue()
            q.push(entry, live: records.count) { Self.isCurrent($0, .idle, in: records) }
            idleQueues[thread] = q
        case .readingRequest:
            var q = readingQueue
            readingQueue = StampQueue()
            q.push(entry, live: records.count) { Self.isCurrent($0, .readingRequest, in: records) }
            readingQueue = q
        case .responding, .reclaimed: break
        }
    }

    private static func isCurrent(_ e: StampQueue.Entry, _ state: State, in records: [ConnectionID: Record]) -> Bool {
        guard let r = records[e.id] else { return false }
        return r.state == state && r.stamp == e.stamp
    }

    /// The connection idle the longest on `thread`, else on any worker (oldest first), else
    /// the one whose request has been arriving the longest; marked reclaimed.
    private mutating func reclaimOldest(preferring thread: WorkerThread, _ hasUnreadBytes: (Int32) -> Bool) -> Reclaim? {
        var found: (id: ConnectionID, phase: ReclaimedPhase)?
        var passedOver: [ConnectionID] = []
        do {
            // A shared copy for the queues' checks, gone before `records` changes again.
            let records = self.records
            let current: (StampQueue.Entry) -> Bool = { Self.isCurrent($0, .idle, in: records) }
            var others: [(stamp: UInt64, thread: WorkerThread)] = []
            for t in Array(idleQueues.keys) where t != thread {
                if let e = idleQueues[t]!.peekOldest(where: current) { others.append((e.stamp, t)) }
            }
            for t in [thread] + others.sorted(by: { $0.stamp < $1.stamp }).map(\.thread) {
                while found == nil, passedOver.count < Self.maxPassedOver,
                    let i = idleQueues[t]?.popOldest(where: current)
                {
                    if hasUnreadBytes(records[i]!.socket) { passedOver.append(i) } else { found = (i, .idle) }
                }
                if found != nil || passedOver.count >= Self.maxPassedOver { break }
            }
            if found == nil, let i = readingQueue.popOldest(where: { Self.isCurrent($0, .readingRequest, in: records) }) {
                found = (i, .readingRequest)
            }
        }
        for i in passedOver { enqueue(i, as: .idle) }  // still idle by the book: queued anew
        guard let (id, phase) = found else { return nil }
        records[id]!.state = .reclaimed
        closing += 1
        reclaimed[phase, default: 0] += 1
        return Reclaim(id: id, socket: records[id]!.socket, phase: phase)
    }

    /// Idle connections with a request waiting in their socket looked at and passed over
    /// per admission, at most (each costs a `recv(MSG_PEEK)` under the lock).
    static let maxPassedOver = 16
}

/// A libmicrohttpd connection (its handle's address, unique while it is open).
struct ConnectionID: Hashable {
    var raw: UInt
}

/// A libmicrohttpd worker thread (`pthread_self()`).
struct WorkerThread: Hashable {
    var raw: UInt
}
