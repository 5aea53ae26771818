import Foundation
import HeraldTestSupport
import Testing

@testable import HeraldPostgres

/// The database going away and coming back: a private cluster, since the shared one
/// serves the other suites meanwhile.
@Suite(.serialized) struct ServerRestartTests {
    @Test func aSessionLostToARestartReconnectsWithBackoffAndListensAgain() throws {
        let cluster = try PostgresCluster.start()
        defer { cluster.stop() }
        let options = PostgresOptions(connection: try PostgresConnectionString(cluster.url), connectTimeout: .seconds(2))
        let conn = try PostgresConnection(options)
        try conn.execute("CREATE TABLE t(x int8)")
        try conn.run("INSERT INTO t VALUES ($1)", [1])
        try conn.listen("after_restart")
        let pidBefore = conn.backendPID

        try cluster.stopServer()
        #expect(!cluster.isRunning)
        let lost = try #require(throws: PostgresError.self) { try conn.query("SELECT x FROM t") }
        #expect(lost.isConnectionLoss)
        #expect(!conn.isConnected)

        // Down for a while: reconnecting gives up at its deadline, with a connection error.
        let clock = ContinuousClock()
        var start = clock.now
        let gaveUp = try #require(throws: PostgresError.self) {
            try conn.reconnect(backoff: ReconnectBackoff(base: .milliseconds(50), cap: .milliseconds(200)), within: .milliseconds(600))
        }
        #expect(gaveUp.kind == .connection)
        #expect(clock.now - start < .seconds(5))

        // Back after ~0.5 s while reconnect is retrying.
        let restarted = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            usleep(500_000)
            try? cluster.startServer()
            restarted.signal()
        }
        start = clock.now
        try conn.reconnect(backoff: ReconnectBackoff(base: .milliseconds(50), cap: .milliseconds(400)), within: .seconds(30))
        restarted.wait()
        #expect(conn.isConnected)
        #expect(conn.backendPID != pidBefore)
        #expect(try conn.query("SELECT x FROM t").map { $0["x"] } == [1])  // re-prepared on the new session

        let sender = try PostgresConnection(options)
        try sender.notify("after_restart", payload: "back")
        #expect(try conn.nextNotification(timeout: .seconds(10))?.payload == "back")
    }
}
