import Foundation
import HeraldCore
import HeraldPostgresStore
import HeraldStore

// Registration through the storage protocols (what the API's subscriptions:batch does), on
// PostgreSQL (PostgresStore) and SQLite (Store): N new random 32-byte tokens in batches of
// 10,000 (the API's batch limit), the same N again (every one an update), and one fan-out
// pass reading them back in token order (1,000 a page). PostgreSQL twice: the ingest path
// Herald uses (new tokens by COPY) and the plain upsert. Benchmarks/pgstore.sh runs it.
//
//   herald-pgstore-bench POSTGRES_URL [TOKENS]     default 100000

let args = CommandLine.arguments
guard args.count >= 2 else {
    FileHandle.standardError.write(Data("usage: herald-pgstore-bench POSTGRES_URL [TOKENS]\n".utf8))
    exit(2)
}
let n = args.count > 2 ? Int(args[2]) ?? 100_000 : 100_000
var rng = SystemRandomNumberGenerator()
let tokens: [[UInt8]] = (0..<n).map { _ in (0..<32).map { _ in UInt8.random(in: 0...255, using: &rng) } }

func seconds(_ body: () throws -> Void) rethrows -> Double {
    let t = Monotonic.nanos()
    try body()
    return Double(Monotonic.nanos() - t) / 1e9
}

func run(_ name: String, _ storage: any HeraldStorage) throws {
    let id = "bench-" + String(name.filter { $0.isLetter || $0 == "-" })
    let ch = try storage.createChannel(
        id: id, bundleID: "com.example.app", mode: .fanout, environment: .sandbox, storagePolicy: .none, apnsChannelID: nil,
        settings: ChannelSettings())
    func ingest() throws {
        for start in stride(from: 0, to: n, by: 10_000) {
            let batch = tokens[start..<min(start + 10_000, n)].map { SubscriptionInput(token: $0) }
            _ = try storage.batch(channelID: id, subscribe: batch, unsubscribe: [])
        }
    }
    let fresh = try seconds(ingest)
    let again = try seconds(ingest)
    let scan = try storage.makeScanner()
    var read = 0
    let pass = try seconds {
        var after: [UInt8] = []
        while true {
            let rows = try scan.next(
                channelNum: ch.num, kind: .activity, shards: .all, after: after, before: nil, now: storage.clock.nowSeconds(),
                limit: 1000)
            read += rows.count
            guard rows.count == 1000, let last = rows.last else { break }
            after = last
        }
    }
    precondition(read == n, "scanned \(read) of \(n)")
    func rate(_ s: Double) -> String { "\(Int(Double(n) / s)) tokens/s (\(String(format: "%.2f", s)) s)" }
    print("\(name): new \(rate(fresh)); again (updates) \(rate(again)); scan \(rate(pass))")
}

// Both ingest paths of PostgresStore, each on its own channel of the same database: new
// tokens by COPY after a probe (what Herald uses), and the plain upsert it replaced.
for path in [PostgresStore.IngestPath.copyNew, .upsert] {
    let pg = try PostgresStore(url: args[1], ingestPath: path)
    try run("postgresql (\(path.rawValue))", pg)
    pg.close()
}
let dir = NSTemporaryDirectory() + "herald-pgstore-bench-\(getpid())"
try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(atPath: dir) }
let sqlite = try Store(path: dir + "/h.db")
try run("sqlite", sqlite)
sqlite.close()
