import HeraldCore
import Testing

@testable import HeraldSQL

@Suite struct BulkInsertTests {
    /// The registry's shape: 32-byte token blobs, WITHOUT ROWID, one transaction.
    @Test func bulkInsertOfTwoHundredThousandBlobRowsInOneWrite() throws {
        let dir = try TemporaryDirectory()
        let db = try Database(path: dir.file("bulk.db"))
        try db.execute(
            "CREATE TABLE token(channel INTEGER NOT NULL, token BLOB NOT NULL, PRIMARY KEY(channel, token)) WITHOUT ROWID")

        let count = 200_000
        let start = Monotonic.nanos()
        let inserted = try db.write { conn in
            let insert = try conn.prepare("INSERT INTO token(channel, token) VALUES (?, ?)")
            var token = [UInt8](repeating: 0, count: 32)
            var n = 0
            for i in 0..<count {
                withUnsafeBytes(of: UInt64(i).bigEndian) { token.replaceSubrange(0..<8, with: $0) }
                try insert.bind(1, int64: 7)
                try token.withUnsafeBytes { try insert.bind(2, blob: $0) }
                n += try insert.run()
            }
            return n
        }
        let seconds = Double(Monotonic.nanos() - start) / 1e9
        print("bulk insert: \(count) rows of 32-byte blobs in \(seconds) s = \(Int(Double(count) / seconds)) rows/s")

        #expect(inserted == count)
        #expect(try db.read { try $0.queryValue("SELECT count(*) FROM token WHERE channel = 7") } == .int(count))
    }
}
