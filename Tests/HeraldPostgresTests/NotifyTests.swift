import Testing

@testable import HeraldPostgres

@Suite struct NotifyTests {
    let db: TestDatabase

    init() throws { db = try TestDatabase() }

    @Test func aNotifyReachesTheListenerWithItsPayload() throws {
        let listener = try db.connect()
        let sender = try db.connect()
        try listener.listen("herald_events")
        try sender.notify("herald_events", payload: "ch-1:42")
        let n = try #require(try listener.nextNotification(timeout: .seconds(10)))
        #expect(n.channel == "herald_events")
        #expect(n.payload == "ch-1:42")
        #expect(n.senderPID == sender.backendPID)
    }

    @Test func theWaitEndsAtTheDeadlineWhenNothingComes() throws {
        let listener = try db.connect()
        try listener.listen("quiet")
        let clock = ContinuousClock()
        let start = clock.now
        #expect(try listener.nextNotification(timeout: .milliseconds(200)) == nil)
        let waited = clock.now - start
        #expect(waited >= .milliseconds(200))
        #expect(waited < .seconds(2))
    }

    @Test func aNotifyInARolledBackTransactionIsNeverDelivered() throws {
        let listener = try db.connect()
        let sender = try db.connect()
        try listener.listen("tx")
        _ = try? sender.transaction { c in
            try c.notify("tx", payload: "rolled back")
            throw Planted()
        }
        try sender.notify("tx", payload: "committed")
        #expect(try listener.nextNotification(timeout: .seconds(10))?.payload == "committed")
        #expect(try listener.nextNotification(timeout: .milliseconds(50)) == nil)
    }

    @Test func afterUnlistenNothingArrives() throws {
        let listener = try db.connect()
        let sender = try db.connect()
        try listener.listen("gone")
        try listener.unlisten("gone")
        try sender.notify("gone")
        #expect(try listener.nextNotification(timeout: .milliseconds(100)) == nil)
    }
}
