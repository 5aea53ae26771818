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
    @Test func stopLetsARequestInFlightFinishAndTurnsNewConnectionsAway() throws {
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
        // Stop turns new connections away at once, while the request is still held. (A
        // connection accepted before that stays open and idle, so the probe sends nothing
        // that would reach the held handler.)
        #expect(
            eventually {
                guard let late = try? RawConnection(port: port) else { return true }
                let (closed, received) = late.waitForClose(timeout: 0.2)
                return closed && received.isEmpty
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

    @Test func stopUnderLoadReturnsAndEveryAnswerSentIsWhole() throws {
        let server = try startServer(HTTPServerConfig(threads: 4))
        let port = server.port
        let stopping = Atomic<Bool>(false)
        let answered = Atomic<Int>(0)
        let broken = Atomic<Int>(0)
        let clients = DispatchGroup()
        for client in 0..<6 {
            clients.enter()
            Thread.detachNewThread {
                defer { clients.leave() }
                var i = 0
                while !stopping.load(ordering: .relaxed) || i < 5 {
                    i += 1
                    guard let c = try? RawConnection(port: port) else { break }  // refused: stopped
                    let body = Array("\(client)/\(i)".utf8)
                    guard (try? c.send(post("/echo", body: body))) != nil else { continue }
                    do {
                        let r = try c.readResponse()
                        if r.status == 200 && r.body == body {
                            answered.add(1, ordering: .relaxed)
                        } else {
                            broken.add(1, ordering: .relaxed)
                        }
                    } catch RawConnection.Failure.closedBeforeResponse {
                        // turned away while stopping
                    } catch {
                        broken.add(1, ordering: .relaxed)
                    }
                }
            }
        }
        #expect(eventually { answered.load(ordering: .relaxed) >= 200 })
        stopping.store(true, ordering: .relaxed)
        server.stop()
        #expect(clients.wait(timeout: .now() + 10) == .success)
        #expect(broken.load(ordering: .relaxed) == 0)
        #expect(server.stats.connections == 0)
    }
}
