import Foundation
import HeraldPostgres
import HeraldTestSupport

/// A new database in the process's shared cluster, and connections to it.
struct TestDatabase: Sendable {
    let url: String

    init() throws {
        url = try PostgresCluster.shared().makeDatabase()
    }

    func connect(statementTimeout: Duration? = .seconds(30)) throws -> PostgresConnection {
        try PostgresConnection(
            PostgresOptions(connection: try PostgresConnectionString(url), statementTimeout: statementTimeout))
    }
}

/// 32 pseudo-random bytes per token, reproducible from `seed`.
func tokens(_ count: Int, seed: UInt64 = 1) -> [[UInt8]] {
    var state = seed
    return (0..<count).map { _ in
        (0..<4).flatMap { _ -> [UInt8] in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return withUnsafeBytes(of: state.bigEndian) { Array($0) }
        }
    }
}

/// Runs `body(i)` for i in 0..<n, each on its own thread, all released at once; returns
/// when all have finished. (Connections are confined: each thread opens its own.)
func onThreads(_ n: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let done = DispatchSemaphore(value: 0)
    let go = DispatchSemaphore(value: 0)
    for i in 0..<n {
        Thread.detachNewThread {
            go.wait()
            body(i)
            done.signal()
        }
    }
    for _ in 0..<n { go.signal() }
    for _ in 0..<n { done.wait() }
}
