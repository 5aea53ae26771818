import Foundation
import HeraldCore

/// A throwaway PostgreSQL server for tests: `scripts/pg-cluster` runs `initdb` and
/// `pg_ctl` in a fresh temp directory, on a Unix socket only (no TCP), with fsync off, as
/// the `postgres` user when the tests run as root (PostgreSQL refuses root).
///
/// `shared` is started once per test process, on first use, and stopped when the process
/// exits (an `atexit` hook; and the script's watchdog stops it if the process dies without
/// running it). A test that stops or restarts its server starts a private one with
/// `start()` and stops it itself.
public final class PostgresCluster: Sendable {
    /// The cluster's directory: data, logs and the socket.
    public let directory: String
    /// A URL to its `postgres` database (user `herald`, trust authentication, no password).
    public let url: String
    private let counter = Locked(0)

    /// The process's shared cluster. - Throws: when the server cannot be started.
    public static func shared() throws -> PostgresCluster {
        try sharedCluster.withLock { state in
            if let cluster = state { return cluster }
            let cluster = try PostgresCluster.start()
            state = cluster
            return cluster
        }
    }

    /// Starts a new cluster (about 2 s). - Throws: `ClusterError` with the script's output.
    public static func start() throws -> PostgresCluster {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("herald-pg-\(UUID().uuidString.prefix(8))").path
        let out = try script(["start", dir, String(getpid())])
        let cluster = PostgresCluster(directory: dir, url: out.trimmingCharacters(in: .whitespacesAndNewlines))
        _ = running.withLock { $0.insert(dir) }
        installExitHook
        return cluster
    }

    private init(directory: String, url: String) {
        self.directory = directory
        self.url = url
    }

    /// A URL to a new, empty database in this cluster (one per test keeps tests apart).
    /// - Throws: `ClusterError` when `createdb` fails.
    public func makeDatabase(_ prefix: String = "t") throws -> String {
        let n = counter.withLock { c in
            c += 1
            return c
        }
        let name = "\(prefix)_\(getpid())_\(n)"
        _ = try Self.script(["createdb", directory, name])
        return "postgresql://herald@/\(name)?host=\(directory)"
    }

    /// Stops the server (fast shutdown: sessions are closed) and keeps its data.
    public func stopServer() throws { _ = try Self.script(["restart-stop", directory]) }

    /// Starts the server again after `stopServer()`.
    public func startServer() throws { _ = try Self.script(["restart-start", directory]) }

    /// True while `pg_ctl status` reports the server running.
    public var isRunning: Bool { (try? Self.script(["status", directory])) != nil }

    /// Stops the server and removes the directory. Idempotent.
    public func stop() {
        _ = try? Self.script(["stop", directory])
        Self.running.withLock { _ = $0.remove(directory) }
    }

    /// The failure of a `scripts/pg-cluster` command, with its output.
    public struct ClusterError: Error, CustomStringConvertible {
        public let description: String
    }

    static let scriptPath = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("scripts/pg-cluster").path

    private static let sharedCluster = Locked<PostgresCluster?>(nil)
    private static let running = Locked<Set<String>>([])
    private static let installExitHook: Void = {
        atexit {
            for dir in PostgresCluster.running.withLock({ $0 }) { _ = try? PostgresCluster.script(["stop", dir]) }
        }
    }()

    /// The bytes of a file as text, read with read(2): String(contentsOfFile:) leaks its
    /// 4 KiB buffer for an empty file (LeakSanitizer, Swift 6.3.1's FoundationEssentials).
    static func readAll(_ path: String) -> String {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return "" }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { break }
            bytes += chunk[0..<n]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Runs `scripts/pg-cluster` with `args` and returns its output (stdout and stderr).
    ///
    /// posix_spawn + waitpid on the one child, output through a temp file: nothing here
    /// depends on Foundation's child reaping, and the cluster the script leaves running
    /// holds no pipe of ours open (a pipe's reader would wait for the server to exit).
    @discardableResult
    static func script(_ args: [String]) throws -> String {
        let outPath = FileManager.default.temporaryDirectory.appendingPathComponent("pg-cluster-\(UUID().uuidString).out").path
        defer { unlink(outPath) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let argv = ([scriptPath] + args).map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, scriptPath, &actions, nil, argv, environ)
        guard rc == 0 else { throw ClusterError(description: "posix_spawn \(scriptPath): errno \(rc)") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 {
            guard errno == EINTR else { throw ClusterError(description: "waitpid: errno \(errno)") }
        }
        let text = Self.readAll(outPath)
        let exited = (status & 0x7f) == 0
        let code = (status >> 8) & 0xff
        guard exited, code == 0 else {
            throw ClusterError(description: "pg-cluster \(args.joined(separator: " ")) failed (status \(status)): \(text)")
        }
        return text
    }
}
