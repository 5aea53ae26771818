import Foundation
import HeraldAPNS
import HeraldCore
import HeraldCrypto
import HeraldNet
import HeraldSender

// herald-bench: drivers for the benchmark scripts in Benchmarks/ (not part of the product).
//
//   herald-bench pool --target HOST:PORT --ca FILE --key FILE --key-id ID --team-id ID
//                     [--requests N] [--connections C] [--streams S] [--token HEX] [--payload FILE] [--gate DIR] [--apns-id 0]
//
//   herald-bench latency --api URL --token ADMIN --sim-control URL --channel ID --device HEX [--events N]
//   herald-bench ingest --api URL --token ADMIN --channel ID --file TOKENS [--batch N] [--clients N]
//
// pool: sends N token pushes through Herald's APNs pool (the same code `herald serve` uses) and
// prints `pool_rate=<requests/s>`, `pool_seconds=<s>` and `herald_cpu_us_per_push=` (this
// process's CPU from the first submit to the last answer, per push: making the requests
// included, as the fan-out makes them too). With `--tokens FILE` each push goes to its own
// device path (one token per line, cycled), as the fan-out does; else all go to `--token`.
// `--apns-id 0`: no `apns-id` field (h2load sends none; the pool's default sends a fresh one).
// `--gate DIR` (Benchmarks/poolinstr.sh): once warm, creates DIR/ready and waits for DIR/go;
// after the last answer, creates DIR/done and waits for DIR/stop (so a profiler counts
// only the measured part).

func fail(_ m: String) -> Never {
    FileHandle.standardError.write(Data("herald-bench: \(m)\n".utf8))
    exit(2)
}

var args = Array(CommandLine.arguments.dropFirst())
guard let verb = args.first, ["pool", "latency", "ingest"].contains(verb) else {
    fail("usage: herald-bench pool|latency|ingest --option value ...")
}
args.removeFirst()
var opts: [String: String] = [:]
var i = 0
while i < args.count {
    guard args[i].hasPrefix("--"), i + 1 < args.count else { fail("bad argument \(args[i])") }
    opts[String(args[i].dropFirst(2))] = args[i + 1]
    i += 2
}
if verb == "latency" {
    runLatency(opts)
    exit(0)
}
if verb == "ingest" {
    runIngest(opts)
    exit(0)
}
guard let target = opts["target"].flatMap({ HostPort(parsing: $0) }) else { fail("--target HOST:PORT") }
guard let keyFile = opts["key"], let keyID = opts["key-id"], let teamID = opts["team-id"] else { fail("--key, --key-id, --team-id") }
let n = Int(opts["requests"] ?? "200000") ?? 200_000
let connections = Int(opts["connections"] ?? "4") ?? 4
let streams = Int(opts["streams"] ?? "1000") ?? 1000
let token = opts["token"] ?? String(repeating: "ab", count: 32)
let payload: [UInt8]
if let p = opts["payload"] {
    guard let d = FileManager.default.contents(atPath: p) else { fail("cannot read \(p)") }
    payload = [UInt8](d)
} else {
    payload = JSON.object([
        "aps": .object(["event": "update", "timestamp": .int(1_767_225_600), "content-state": .object(["home": 1, "away": 0])])
    ]).encoded()
}

let key = try P256PrivateKey(contentsOfFile: keyFile)
let jwt = JWTProvider(credentials: APNSCredentials(keyID: keyID, teamID: teamID, key: key), logger: .discard)
var config = APNSPoolConfig(target: target)
config.caFile = opts["ca"]
config.connections = connections
config.maxStreamsPerConnection = streams
let pool = try APNSClientPool(config: config, jwt: jwt, logger: .discard, metrics: MetricsRegistry())

final class Counter: APNSResultSink, @unchecked Sendable {
    let cond = NSCondition()
    var done = 0
    var delivered = 0
    /// Answered requests, handed back to the driver's thread for reuse (as the fan-out's
    /// answers go back to its engine thread).
    var answered: [APNSRequest] = []
    func apnsCompleted(_ request: APNSRequest, result: APNSResult) {
        cond.lock()
        done += 1
        if result.isDelivered { delivered += 1 }
        answered.append(request)
        if done % 4096 == 0 { cond.broadcast() }
        cond.unlock()
    }

    /// One lock for each turn's answers (as a sink that adopts the batched call does).
    func apnsCompleted(_ batch: ArraySlice<APNSCompletion>) {
        cond.lock()
        batch.withUnsafeBufferPointer { p in
            for i in p.indices {
                done += 1
                if p[i].result.isDelivered { delivered += 1 }
                answered.append(p[i].request)
                if done % 4096 == 0 { cond.broadcast() }
            }
        }
        cond.unlock()
    }

    /// The requests answered since the last call (`into` is emptied first).
    func takeAnswered(into out: inout [APNSRequest]) {
        out.removeAll(keepingCapacity: true)
        cond.lock()
        swap(&out, &answered)
        cond.unlock()
    }
}

let counter = Counter()
let template = APNSTemplate(
    headers: HeaderList(APNSRequests.tokenPushFields(bundleID: "com.example.app", priority: 5, expiration: nil)),
    body: HTTP2Body(payload), sink: counter, keepResponseHeaders: false, generatesAPNSID: opts["apns-id"] != "0")
// Distinct device tokens as bytes, read before the clock starts (the fan-out reads them
// from SQLite); each push's path is written from them, as the fan-out's are.
var tokens: [[UInt8]] = [Hex.decode(token) ?? []]
if let file = opts["tokens"] {
    guard let text = try? String(contentsOfFile: file, encoding: .utf8) else { fail("cannot read \(file)") }
    tokens = text.split(separator: "\n").prefix(n).map { Hex.decode(String($0)) ?? [] }
    if tokens.isEmpty { fail("no token in \(file)") }
}

func cpuSeconds() -> Double {
    var ru = rusage()
    getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &ru)
    return Double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + Double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6
}
// Warm up: connections open and authenticated before the clock starts.
let warm = Counter()
let warmTemplate = APNSTemplate(headers: template.headers, body: template.body, sink: warm)
pool.submit((0..<(connections * 4)).map { _ in APNSRequest(path: APNSRequests.tokenPath(token), template: warmTemplate) })
_ = pool.waitIdle(timeout: 30)

/// Creates `dir/mark`, then waits until `dir/wait` exists (`--gate`).
let gateDir = opts["gate"]
@MainActor func gate(_ mark: String, then wait: String) {
    guard let dir = gateDir else { return }
    FileManager.default.createFile(atPath: dir + "/" + mark, contents: nil)
    while !FileManager.default.fileExists(atPath: dir + "/" + wait) { usleep(10_000) }
}
gate("ready", then: "go")

let start = Monotonic.seconds()
let cpuStart = cpuSeconds()
var submitted = 0
// Requests answered come back and are reused, as the fan-out's are (`APNSRequestStock`).
var stock = APNSRequestStock()
var answered: [APNSRequest] = []
while submitted < n {
    let k = min(2048, n - submitted)
    counter.takeAnswered(into: &answered)
    for r in answered { stock.put(r) }
    answered.removeAll(keepingCapacity: true)
    var batch: [APNSRequest] = []
    batch.reserveCapacity(k)
    for j in 0..<k { batch.append(stock.take(token: tokens[(submitted + j) % tokens.count], template: template)) }
    pool.submit(batch)
    submitted += k
}
_ = pool.waitIdle(timeout: 600)
let seconds = Monotonic.seconds() - start
let cpu = cpuSeconds() - cpuStart
gate("done", then: "stop")
counter.cond.lock()
let delivered = counter.delivered
counter.cond.unlock()
pool.shutdown()
print("pool_requests=\(n)")
print("pool_delivered=\(delivered)")
print(String(format: "pool_seconds=%.3f", seconds))
print(String(format: "pool_rate=%.0f", Double(n) / seconds))
print(String(format: "herald_cpu_us_per_push=%.2f", cpu * 1e6 / Double(n)))
if delivered != n { exit(1) }
