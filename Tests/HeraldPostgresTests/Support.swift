import HeraldPostgres
import HeraldTestSupport

/// A new database in the process's shared cluster, and connections to it.
struct TestDatabase {
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
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return withUnsafeBytes(of: state.bigEndian) { Array($0) }
        }
    }
}
