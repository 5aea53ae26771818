import Dispatch
import Foundation
import Glibc
import HeraldCore
import HeraldHTTPServer
import Synchronization
import Testing

/// Blocks each request until `release()`, recording that it arrived.
final class GateHandler: HTTPHandler {
    let entered = Atomic<Int>(0)
    private let gate = DispatchSemaphore(value: 0)

    func handle(_ r: HTTPRequest) -> HTTPResponse {
        entered.add(1, ordering: .relaxed)
        _ = gate.wait(timeout: .now() + 10)
        return .text(200, "finished")
    }

    func release() { gate.signal() }
}

@Suite struct StopTests {
    @Test func stopLetsARequestInFlightFinishAndRefusesNewConnections() throws {
        let handler = GateHandler()
        let logs = LogCapture()
        let server = try startServer(logger: logs.logger, handler: handler)
        let port = server.port
        let c = try connect(server)
        try c.send(get("/slow"))
        #expect(eventually { handler.entered.load(ordering: .relaxed) == 1 })

        let stopped = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            server.stop()
            stopped.signal()
        }
        // Stop quiesces at once: new connections are refused while the request is held.
        #expect(
            eventually {
                do {
                    _ = try RawConnection(port: port)
                    return false
                } catch { return true }
            })
        #expect(stopped.wait(timeout: .now() + 0.2) == .timedOut)  // still draining
        handler.release()
        let r = try c.readResponse()
        #expect(r.status == 200)
        #expect(r.text == "finished")
        #expect(r.headers["connection"]?.lowercased() == "close")
        #expect(stopped.wait(timeout: .now() + 10) == .success)
        #expect(!server.isRunning)
        #expect(logs.events("http.stopped").first?["drained"] == true)
    }

    @Test func stopClosesIdleKeepAliveConnectionsAndIsIdempotent() throws {
        let server = try startServer()
        let c = try connect(server)
        try c.send(get("/"))
        #expect(try c.readResponse().status == 200)
        server.stop()
        #expect(c.waitForClose(timeout: 5).closed)
        server.stop()
        #expect(server.stats.connections == 0)
    }

    @Test func startAfterStopThrowsStopped() throws {
        let server = try startServer()
        server.stop()
        #expect(throws: HTTPServerError.stopped) { try server.start() }
    }

    @Test func stopGivesUpOnARequestThatOutlastsTheGracePeriod() throws {
        let handler = GateHandler()
        let logs = LogCapture()
        let server = try startServer(HTTPServerConfig(shutdownGraceSeconds: 0.2), logger: logs.logger, handler: handler)
        let c = try connect(server)
        try c.send(get("/stuck"))
        #expect(eventually { handler.entered.load(ordering: .relaxed) == 1 })
        let stopper = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            server.stop()
            stopper.signal()
        }
        #expect(eventually { !logs.events("http.drain_timeout").isEmpty })
        // stop() now joins the worker threads, so it returns only once the handler does.
        #expect(stopper.wait(timeout: .now() + 0.2) == .timedOut)
        handler.release()
        #expect(stopper.wait(timeout: .now() + 10) == .success)
        let line = try #require(logs.events("http.stopped").first)
        #expect(line["drained"] == false)
        #expect(line["abandoned"] == 1)
        #expect(c.waitForClose(timeout: 5).closed)
    }

    @Test func aDroppedServerStopsItself() throws {
        var server: HTTPServer? = try startServer()
        let port = try #require(server?.port)
        _ = try roundTrip(server!, get("/"))
        server = nil
        #expect(throws: RawConnection.Failure.connect(errno: ECONNREFUSED)) { _ = try RawConnection(port: port) }
    }
}
