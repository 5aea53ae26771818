import HeraldStore
import Testing

@testable import HeraldPostgresStore

/// The PostgreSQL scanner's read-ahead (pure: no database): a call that continues a pass is
/// served from the rows read before, an expiry is checked against each call's clock, and a
/// call that does not continue reads again.
@Suite struct ScanReadAheadTests {
    let key = ScanReadAhead.Key(channelNum: 1, kind: .activity, shards: .all, before: nil)

    func rows(_ range: ClosedRange<UInt8>, expiresAt: Int64? = nil) -> [ScanReadAhead.Row] {
        range.map { ScanReadAhead.Row(token: [$0], registeredAtMillis: Int64($0), expiresAt: expiresAt) }
    }

    @Test func aContinuingCallIsServedFromTheRowsReadBefore() {
        var ra = ScanReadAhead()
        var (got, readAfter) = ra.take(key, after: [], now: 0, at: 0, limit: 2)
        #expect(got.isEmpty && readAfter == [])
        ra.filled(key, rows(1...5), asked: 8, at: 0)
        (got, readAfter) = ra.take(key, after: [], now: 0, at: 0, limit: 2)
        #expect(got.map(\.token) == [[1], [2]] && readAfter == nil)
        (got, readAfter) = ra.take(key, after: [2], now: 0, at: 0, limit: 2)
        #expect(got.map(\.token) == [[3], [4]] && readAfter == nil)
        // The last read came back short (5 of 8): the range is exhausted, nothing more to read.
        (got, readAfter) = ra.take(key, after: [4], now: 0, at: 0, limit: 2)
        #expect(got.map(\.token) == [[5]] && readAfter == nil)
    }

    @Test func aFullReadIsReadOnFromItsLastRowOnceServed() {
        var ra = ScanReadAhead()
        _ = ra.take(key, after: [], now: 0, at: 0, limit: 2)
        ra.filled(key, rows(1...4), asked: 4, at: 0)
        _ = ra.take(key, after: [], now: 0, at: 0, limit: 2)
        var (got, readAfter) = ra.take(key, after: [2], now: 0, at: 0, limit: 3)
        // Two left, then the database from the last row read.
        #expect(got.map(\.token) == [[3], [4]] && readAfter == [4])
        ra.filled(key, rows(5...5), asked: 4, at: 0)
        (got, readAfter) = ra.take(key, after: [4], now: 0, at: 0, limit: 1)
        #expect(got.map(\.token) == [[5]] && readAfter == nil)
    }

    @Test func rowsExpiredSinceTheyWereReadAreSkipped() {
        var ra = ScanReadAhead()
        _ = ra.take(key, after: [], now: 0, at: 0, limit: 2)
        ra.filled(key, rows(1...2) + rows(3...4, expiresAt: 100) + rows(5...6), asked: 6, at: 0)
        var (got, _) = ra.take(key, after: [], now: 99, at: 0, limit: 3)
        #expect(got.map(\.token) == [[1], [2], [3]])
        (got, _) = ra.take(key, after: [3], now: 100, at: 0, limit: 3)
        #expect(got.map(\.token) == [[5], [6]])
    }

    @Test func aCallThatDoesNotContinueThePassReadsAgain() {
        var ra = ScanReadAhead()
        _ = ra.take(key, after: [], now: 0, at: 0, limit: 2)
        ra.filled(key, rows(1...6), asked: 8, at: 0)
        _ = ra.take(key, after: [], now: 0, at: 0, limit: 2)
        // Another cursor (a resumed or wrapped pass), another bound, another set of shards.
        #expect(ra.take(key, after: [4], now: 0, at: 0, limit: 2).readAfter == [4])
        var bounded = key
        bounded.before = [9]
        #expect(ra.take(bounded, after: [], now: 0, at: 0, limit: 2).readAfter == [])
        var some = key
        some.shards = ShardSet([1])
        #expect(ra.take(some, after: [], now: 0, at: 0, limit: 2).readAfter == [])
    }

    @Test func passesOfSeveralChannelsAreKeptSideBySideUpToTheCapacity() {
        var ra = ScanReadAhead(capacity: 2)
        let keys = (1...3).map { ScanReadAhead.Key(channelNum: $0, kind: .activity, shards: .all, before: nil) }
        for k in keys.prefix(2) {
            _ = ra.take(k, after: [], now: 0, at: 0, limit: 1)
            ra.filled(k, rows(1...3), asked: 4, at: 0)
        }
        // Round robin between the two: each continues from its own rows.
        #expect(ra.take(keys[0], after: [], now: 0, at: 0, limit: 1).rows.map(\.token) == [[1]])
        #expect(ra.take(keys[1], after: [], now: 0, at: 0, limit: 1).rows.map(\.token) == [[1]])
        #expect(ra.take(keys[0], after: [1], now: 0, at: 0, limit: 1).rows.map(\.token) == [[2]])
        // A third pass pushes out the least recently used (channel 2).
        _ = ra.take(keys[2], after: [], now: 0, at: 0, limit: 1)
        #expect(ra.passes.count == 2 && ra.passes[keys[1]] == nil)
        #expect(ra.take(keys[1], after: [1], now: 0, at: 0, limit: 1).readAfter == [1])
    }

    @Test func aPassThatReachedItsEndIsReadAgainByTheNext() {
        var ra = ScanReadAhead()
        // An event on an empty channel: its pass ends at once.
        #expect(ra.take(key, after: [], now: 0, at: 0, limit: 2).readAfter == [])
        ra.filled(key, [], asked: 8, at: 0)
        #expect(ra.take(key, after: [], now: 0, at: 0, limit: 2) == ([], nil))
        #expect(ra.passes.isEmpty)
        // Tokens registered since: the next event's pass reads them.
        #expect(ra.take(key, after: [], now: 0, at: 0, limit: 2).readAfter == [])
    }

    @Test func rowsReadLongerAgoThanMaxAgeAreReadAgain() {
        var ra = ScanReadAhead(maxAge: 1)
        _ = ra.take(key, after: [], now: 0, at: 10, limit: 2)
        ra.filled(key, rows(1...6), asked: 8, at: 10)
        #expect(ra.take(key, after: [], now: 0, at: 10.5, limit: 2).rows.map(\.token) == [[1], [2]])
        #expect(ra.take(key, after: [2], now: 0, at: 11, limit: 2).rows.map(\.token) == [[3], [4]])
        // Older than a second: the rest is read again after the last token served.
        #expect(ra.take(key, after: [4], now: 0, at: 11.5, limit: 2) == ([], [4]))
    }

    /// A read sent ahead of time (`PostgresScanner`) is used only where it continues its
    /// pass: from the pass's last read row, the range not read to the end, at most `maxAge`
    /// old; its rows then keep the older time of the rows still unserved.
    @Test func aReadSentAheadContinuesItsPassOnlyFromItsLastRowAndWhileFresh() {
        var ra = ScanReadAhead(maxAge: 1)
        #expect(ra.nextRead(key) == nil)
        _ = ra.take(key, after: [], now: 0, at: 10, limit: 2)
        ra.filled(key, rows(1...4), asked: 4, at: 10)
        #expect(ra.nextRead(key) == [4])
        #expect(ra.continues(key, after: [4], readAt: 10.2, at: 10.5))
        #expect(!ra.continues(key, after: [3], readAt: 10.2, at: 10.5), "not where the pass's reading stopped")
        #expect(!ra.continues(key, after: [4], readAt: 10.2, at: 11.3), "older than maxAge")
        var other = key
        other.channelNum = 2
        #expect(!ra.continues(other, after: [4], readAt: 10.2, at: 10.5), "no such pass")
        // Appended behind rows not yet served (a channel served round robin): those rows
        // still count from 10, so the whole pass goes stale a second after 10.
        ra.filled(key, rows(5...8), asked: 4, at: 10.2)
        #expect(ra.take(key, after: [], now: 0, at: 10.9, limit: 5).rows.map(\.token) == [[1], [2], [3], [4], [5]])
        #expect(ra.take(key, after: [5], now: 0, at: 11.05, limit: 2) == ([], [5]))
        // A short read ends the range: nothing more to send ahead.
        ra.filled(key, rows(6...6), asked: 4, at: 11.05)
        #expect(ra.nextRead(key) == nil && !ra.continues(key, after: [6], readAt: 11.05, at: 11.1))
    }
}
