import Testing

@testable import HeraldHTTPServer

/// The admission and reclaim decisions, without sockets: connections are numbers, threads
/// are numbers, addresses are 10.0.0.x.
@Suite struct ConnectionBookTests {
    static let t1 = WorkerThread(raw: 1)
    static let t2 = WorkerThread(raw: 2)

    static func ip(_ last: UInt8) -> ClientAddress { ClientAddress(ipv4: 10, 0, 0, last) }

    static func book(max: Int, perAddress: Int = 0, closing: Int = 64) -> ConnectionBook {
        ConnectionBook(limits: .init(maxConnections: max, perAddress: perAddress, closingAllowance: closing))
    }

    /// Admits and opens connection `id` from `address` on thread 1; returns the admission.
    @discardableResult
    /// Expects `accepted` (a transition's Bool result, or its negation); a mutating call
    /// cannot sit inside `#expect` itself.
    static func holds(_ accepted: Bool, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(accepted, sourceLocation: sourceLocation)
    }

    @discardableResult
    static func open(_ b: inout ConnectionBook, _ id: UInt, from address: ClientAddress = ip(1)) -> ConnectionBook.Admission {
        let a = b.admit(address, on: t1)
        if case .admit = a { b.opened(ConnectionID(raw: id), from: address, socket: Int32(id) + 100, on: t1) }
        return a
    }

    /// One whole request on connection `id` (arrived, answered, ended).
    static func request(_ b: inout ConnectionBook, _ id: UInt) {
        Self.holds(b.requestArrived(ConnectionID(raw: id)))
        Self.holds(b.responding(ConnectionID(raw: id)))
        Self.holds(!b.requestEnded(ConnectionID(raw: id)))
    }

    static func reclaim(_ id: UInt, _ phase: ConnectionBook.ReclaimedPhase = .idle) -> ConnectionBook.Admission {
        .admit(reclaiming: .init(id: ConnectionID(raw: id), socket: Int32(id) + 100, phase: phase))
    }

    @Test func belowTheCapEveryConnectionIsAdmittedAsIs() {
        var b = Self.book(max: 3)
        for id: UInt in 1...3 {
            let a = Self.open(&b, id)
            #expect(a == .admit(reclaiming: nil))
        }
        #expect(b.open == 3)
        #expect(b.refused.isEmpty && b.reclaimed.isEmpty)
    }

    @Test func atTheCapTheConnectionIdleLongestIsReclaimedForTheNewOne() {
        var b = Self.book(max: 3)
        for id: UInt in 1...3 { Self.open(&b, id) }
        // 1 is used again: 2 has now been idle longest, then 3, then 1.
        Self.request(&b, 1)
        do {
            let a = Self.open(&b, 4)
            #expect(a == Self.reclaim(2))
        }
        do {
            let a = Self.open(&b, 5)
            #expect(a == Self.reclaim(3))
        }
        do {
            let a = Self.open(&b, 6)
            #expect(a == Self.reclaim(1))
        }
        #expect(b.reclaimed[.idle] == 3)
        #expect(b.closing == 3)
        // Reclaimed ones hold their descriptor until closed.
        #expect(b.open == 6)
        for id: UInt in 1...3 { b.closed(ConnectionID(raw: id)) }
        #expect(b.open == 3 && b.closing == 0)
    }

    @Test func aRespondingConnectionIsNeverReclaimedAndWithNoneIdleTheNewOneIsRefused() {
        var b = Self.book(max: 2)
        Self.open(&b, 1)
        Self.open(&b, 2)
        Self.holds(b.requestArrived(ConnectionID(raw: 1)))
        Self.holds(b.responding(ConnectionID(raw: 1)))  // oldest, but its handler runs
        do {
            let a = Self.open(&b, 3)
            #expect(a == Self.reclaim(2))
        }
        Self.holds(b.requestArrived(ConnectionID(raw: 3)))
        Self.holds(b.responding(ConnectionID(raw: 3)))
        do {
            let a = b.admit(Self.ip(9), on: Self.t2)
            #expect(a == .refuse(.connectionLimit))
        }
        #expect(b.refused[.connectionLimit] == 1)
        // Once answered, 1 is idle again and may make room.
        Self.holds(!b.requestEnded(ConnectionID(raw: 1)))
        do {
            let a = Self.open(&b, 4)
            #expect(a == Self.reclaim(1))
        }
    }

    @Test func aRequestStillArrivingIsReclaimedOnlyWhenNoneIsIdle() {
        var b = Self.book(max: 2)
        Self.open(&b, 1)
        Self.open(&b, 2)
        Self.holds(b.requestArrived(ConnectionID(raw: 1)))  // older, but reading its request
        do {
            let a = Self.open(&b, 3)
            #expect(a == Self.reclaim(2))
        }
        Self.holds(b.requestArrived(ConnectionID(raw: 3)))
        do {
            let a = Self.open(&b, 4)
            #expect(a == Self.reclaim(1, .readingRequest))
        }
        // The request on a reclaimed connection runs no handler, and its end is the reclaim's.
        Self.holds(!b.responding(ConnectionID(raw: 1)))
        Self.holds(b.requestEnded(ConnectionID(raw: 1)))
        Self.holds(!b.requestArrived(ConnectionID(raw: 2)))
        #expect(b.reclaimed == [.idle: 1, .readingRequest: 1])
    }

    @Test func anIdleConnectionWhoseRequestHasArrivedUnreadIsPassedOver() {
        var b = Self.book(max: 3)
        for id: UInt in 1...3 { Self.open(&b, id) }
        // 1 and 2 have a request in their socket that their worker has not read yet.
        let waiting: Set<Int32> = [101, 102]
        do {
            let a = b.admit(Self.ip(2), on: Self.t1) { waiting.contains($0) }
            #expect(a == Self.reclaim(3))
        }
        b.opened(ConnectionID(raw: 4), from: Self.ip(2), socket: 104, on: Self.t1)
        // With every idle one waiting to be read and none reading, the newcomer is refused.
        do {
            let a = b.admit(Self.ip(2), on: Self.t1) { _ in true }
            #expect(a == .refuse(.connectionLimit))
        }
        // Passed over, not forgotten: once nothing waits, 1 (idle longest) makes room.
        do {
            let a = b.admit(Self.ip(2), on: Self.t1) { _ in false }
            #expect(a == .admit(reclaiming: .init(id: ConnectionID(raw: 1), socket: 101, phase: .idle)))
        }
    }

    @Test func theAcceptingWorkersOwnIdleConnectionIsReclaimedFirstThenTheOldestElsewhere() {
        var b = Self.book(max: 3)
        for (id, thread) in [(UInt(1), Self.t2), (2, Self.t1), (3, Self.t2)] {
            let a = b.admit(Self.ip(1), on: thread)
            #expect(a == .admit(reclaiming: nil))
            b.opened(ConnectionID(raw: id), from: Self.ip(1), socket: Int32(id) + 100, on: thread)
        }
        // Accepted on thread 1: its own 2, though 1 (thread 2) has been idle longer.
        do {
            let a = b.admit(Self.ip(1), on: Self.t1)
            #expect(a == Self.reclaim(2))
        }
        b.opened(ConnectionID(raw: 4), from: Self.ip(1), socket: 104, on: Self.t1)
        Self.holds(b.requestArrived(ConnectionID(raw: 4)))
        // Thread 1 has none idle now: the oldest elsewhere, 1 before 3.
        do {
            let a = b.admit(Self.ip(1), on: Self.t1)
            #expect(a == Self.reclaim(1))
        }
        b.opened(ConnectionID(raw: 5), from: Self.ip(1), socket: 105, on: Self.t1)
        Self.holds(b.requestArrived(ConnectionID(raw: 5)))
        do {
            let a = b.admit(Self.ip(1), on: Self.t1)
            #expect(a == Self.reclaim(3))
        }
    }

    @Test func aConnectionClosingAfterItsResponseIsNotReclaimed() {
        var b = Self.book(max: 2)
        Self.open(&b, 1)
        Self.open(&b, 2)
        Self.holds(b.requestArrived(ConnectionID(raw: 1)))
        Self.holds(b.responding(ConnectionID(raw: 1)))
        do {
            let r = b.requestEnded(ConnectionID(raw: 1), keepsOpen: false)
            #expect(!r)
        }  // Connection: close
        do {
            let a = Self.open(&b, 3)
            #expect(a == Self.reclaim(2))
        }
        Self.holds(b.requestArrived(ConnectionID(raw: 3)))
        Self.holds(b.responding(ConnectionID(raw: 3)))
        do {
            let a = b.admit(Self.ip(1), on: Self.t2)
            #expect(a == .refuse(.connectionLimit))
        }
    }

    @Test func thePerAddressCapRefusesOnlyThatAddressAndCountsConnectionsUntilClosed() {
        var b = Self.book(max: 3, perAddress: 2)
        Self.open(&b, 1, from: Self.ip(1))
        Self.open(&b, 2, from: Self.ip(1))
        do {
            let a = b.admit(Self.ip(1), on: Self.t1)
            #expect(a == .refuse(.perAddressLimit))
        }
        do {
            let a = Self.open(&b, 3, from: Self.ip(2))
            #expect(a == .admit(reclaiming: nil))
        }
        // At the global cap: 4 from 10.0.0.2 reclaims 1, which still counts for 10.0.0.1.
        do {
            let a = Self.open(&b, 4, from: Self.ip(2))
            #expect(a == Self.reclaim(1))
        }
        do {
            let a = b.admit(Self.ip(1), on: Self.t1)
            #expect(a == .refuse(.perAddressLimit))
        }
        b.closed(ConnectionID(raw: 1))
        #expect(b.count(from: Self.ip(1)) == 1)
        do {
            let a = Self.open(&b, 5, from: Self.ip(1))
            #expect(a == Self.reclaim(2))
        }
        #expect(b.refused[.perAddressLimit] == 2)
    }

    @Test func zeroMeansNoPerAddressCap() {
        var b = Self.book(max: 100, perAddress: 0)
        for id: UInt in 1...100 {
            let a = Self.open(&b, id)
            #expect(a == .admit(reclaiming: nil))
        }
        #expect(b.count(from: Self.ip(1)) == 100)
    }

    @Test func anAdmissionCountsAtOnceSoTwoWorkersCannotBothTakeTheLastPlace() {
        var b = Self.book(max: 10, perAddress: 1)
        do {
            let a = b.admit(Self.ip(1), on: Self.t1)
            #expect(a == .admit(reclaiming: nil))
        }
        do {
            let a = b.admit(Self.ip(1), on: Self.t2)
            #expect(a == .refuse(.perAddressLimit))
        }
        b.opened(ConnectionID(raw: 1), from: Self.ip(1), socket: 101, on: Self.t1)
        #expect(b.count(from: Self.ip(1)) == 1)
        #expect(b.open == 1)
    }

    @Test func anAdmissionThatNeverOpensIsReleasedByTheThreadsNextAdmission() {
        var b = Self.book(max: 1, perAddress: 1)
        do {
            let a = b.admit(Self.ip(1), on: Self.t1)
            #expect(a == .admit(reclaiming: nil))
        }
        // libmicrohttpd dropped it (no STARTED); the same worker accepts the next one.
        do {
            let a = b.admit(Self.ip(1), on: Self.t1)
            #expect(a == .admit(reclaiming: nil))
        }
        #expect(b.count(from: Self.ip(1)) == 1)
        // Still pending on thread 1: thread 2 finds the cap reached, with nothing to reclaim.
        do {
            let a = b.admit(Self.ip(2), on: Self.t2)
            #expect(a == .refuse(.connectionLimit))
        }
    }

    @Test func reclaimedConnectionsNotYetClosedAreBoundedByTheClosingAllowance() {
        var b = Self.book(max: 2, closing: 1)
        Self.open(&b, 1)
        Self.open(&b, 2)
        do {
            let a = Self.open(&b, 3)
            #expect(a == Self.reclaim(1))
        }
        do {
            let a = b.admit(Self.ip(2), on: Self.t2)
            #expect(a == .refuse(.connectionLimit))
        }
        b.closed(ConnectionID(raw: 1))
        do {
            let a = Self.open(&b, 4)
            #expect(a == Self.reclaim(2))
        }
    }

    @Test func manyRequestsOnFewConnectionsKeepTheQueuesSmall() {
        var b = Self.book(max: 4)
        for id: UInt in 1...4 { Self.open(&b, id) }
        for i in 0..<10_000 { Self.request(&b, UInt(i % 4) + 1) }
        #expect(b.queuedEntries <= 2 * (2 * 4 + 64 + 1))
        // Still in order: 1 was used least recently (10,000 is a multiple of 4).
        do {
            let a = Self.open(&b, 5)
            #expect(a == Self.reclaim(1))
        }
    }

    /// Random events on 3 addresses and 2 threads, checked after each step: the caps hold,
    /// and no reclaim ever names a connection whose handler runs or one already reclaimed.
    @Test func randomEventsNeverBreakTheCapsOrReclaimARespondingConnection() {
        var rng = SplitMix(seed: 11)
        let limits = ConnectionBook.Limits(maxConnections: 8, perAddress: 4, closingAllowance: 3)
        var b = ConnectionBook(limits: limits)
        enum S { case idle, reading, responding, reclaimed }
        var model: [UInt: (address: ClientAddress, state: S)] = [:]
        var next: UInt = 1
        for _ in 0..<20_000 {
            let ids = Array(model.keys)
            switch rng.next() % 6 {
            case 0, 1:
                let address = Self.ip(UInt8(rng.next() % 3))
                let thread = rng.next() % 2 == 0 ? Self.t1 : Self.t2
                let a = b.admit(address, on: thread)
                if case .admit(let r) = a {
                    if let r {
                        let s = model[r.id.raw]?.state
                        #expect(s == .idle || s == .reading, "reclaimed a connection that was \(String(describing: s))")
                        model[r.id.raw]!.state = .reclaimed
                    }
                    if rng.next() % 8 != 0 {  // now and then libmicrohttpd drops it
                        b.opened(ConnectionID(raw: next), from: address, socket: 0, on: thread)
                        model[next] = (address, .idle)
                        next += 1
                    }
                }
            case 2:
                guard let id = ids.randomElement(using: &rng) else { continue }
                let ok = b.requestArrived(ConnectionID(raw: id))
                #expect(ok == (model[id]!.state != .reclaimed))
                if ok { model[id]!.state = .reading }
            case 3:
                guard let id = ids.randomElement(using: &rng), model[id]!.state == .reading else { continue }
                let ok = b.responding(ConnectionID(raw: id))
                #expect(ok)
                model[id]!.state = .responding
            case 4:
                guard let id = ids.randomElement(using: &rng), model[id]!.state != .idle else { continue }
                let reclaimed = b.requestEnded(ConnectionID(raw: id))
                #expect(reclaimed == (model[id]!.state == .reclaimed))
                if !reclaimed { model[id]!.state = .idle }
            default:
                guard let id = ids.randomElement(using: &rng) else { continue }
                b.closed(ConnectionID(raw: id))
                model[id] = nil
            }
            let closing = model.values.filter { $0.state == .reclaimed }.count
            #expect(b.open == model.count && b.closing == closing)
            #expect(model.count - closing <= limits.maxConnections)
            #expect(closing <= limits.closingAllowance)
            for a in 0..<3 {
                let n = model.values.filter { $0.address == Self.ip(UInt8(a)) }.count
                #expect(n <= limits.perAddress)
            }
        }
        #expect((b.reclaimed[.idle] ?? 0) > 100 && (b.refused[.connectionLimit] ?? 0) > 100)
    }
}

/// A small seeded generator, so the random test is the same every run.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
