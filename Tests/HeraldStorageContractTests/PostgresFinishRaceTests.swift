import Foundation
import HeraldCore
import HeraldPostgres
import HeraldPostgresStore
import HeraldStore
import HeraldTestSupport
import Testing

/// Two holders finishing their shards of one event at the same moment: the last of them
/// must see the other's done rows and end the event (each takes the event's row lock
/// first). Without it, each transaction's count of done shards missed the other's
/// uncommitted rows and the event stayed `sending` for good (seen under load in
/// PostgresWorkersServeTests).
@Suite struct PostgresFinishRaceTests {
    @Test func twoHoldersFinishingAtOnceEndTheEvent() throws {
        let f = try Fixture(.postgres)
        let ch = try f.channel()
        let e = try f.publish().event
        let (other, lower, upper) = try f.splitLease(ch)
        // A third session holds the event's row, so both finishes meet at it.
        let raw = try PostgresConnection(PostgresOptions(connection: try PostgresConnectionString(try #require(f.url))))
        defer { raw.close() }
        try raw.execute("BEGIN")
        _ = try raw.query("SELECT 1 FROM events WHERE id = $1 FOR UPDATE", [.text(e.id)])
        let failures = Locked<[String]>([])
        let done = DispatchSemaphore(value: 0)
        for (store, shards) in [(UncheckedBox(f.storage), lower), (UncheckedBox(other), upper)] {
            Thread.detachNewThread {
                var c = EventCounters()
                c.sent = 3
                do {
                    try store.value.finishEvent(eventID: e.id, shards: shards, state: .done, counters: c, reason: nil, supersededBy: nil)
                } catch { failures.withLock { $0.append("\(error)") } }
                done.signal()
            }
        }
        let waiting = """
            SELECT count(DISTINCT l.pid) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
            WHERE NOT l.granted AND a.datname = current_database()
            """
        let blocked = Poll.until(timeout: 10, interval: 0.01) { (try? raw.queryValue(waiting))??.int64Value ?? 0 >= 2 }
        #expect(blocked, "both finishes waited on the event's row")
        try raw.execute("COMMIT")
        done.wait()
        done.wait()
        #expect(failures.withLock { $0 }.isEmpty)
        let r = try #require(try f.storage.event(id: e.id))
        #expect(r.state == .done, "\(r.state)")
        #expect(r.counters.sent == 6)
    }
}
