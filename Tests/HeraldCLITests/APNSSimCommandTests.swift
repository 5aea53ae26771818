import Foundation
import HeraldCore
import HeraldNet
import Testing

@testable import HeraldCLI

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite struct APNSSimCommandTests {
    func settings(_ args: [String], env: [String: String] = [:]) throws -> APNSSimCommand.Settings {
        var a = Arguments(args, environment: env)
        let s = try APNSSimCommand.Settings.read(&a)
        try a.finish()
        return s
    }

    @Test func defaultsAndEnvironmentAndFlags() throws {
        let d = try settings([])
        #expect(d.listen == HostPort(host: "127.0.0.1", port: 2197))
        #expect(d.control == HostPort(host: "127.0.0.1", port: 2198))
        #expect(d.directory == "./apns-sim")
        #expect(d.maxStreams == 1000 && d.threads == 1 && d.ledger)

        let e = try settings(
            [],
            env: [
                "HERALD_SIM_LISTEN": "0.0.0.0:443", "HERALD_SIM_CONTROL": "none", "HERALD_SIM_DIR": "/tmp/x",
                "HERALD_SIM_FAULTS": "500=0.5",
            ])
        #expect(e.listen == HostPort(host: "0.0.0.0", port: 443))
        #expect(e.control == nil)
        #expect(e.directory == "/tmp/x")
        #expect(e.faults.errorRates == [500: 0.5])

        let f = try settings(
            ["--listen", "[::1]:3000", "--max-streams", "10", "--threads", "2", "--no-ledger", "--faults", "latency-ms=5"],
            env: ["HERALD_SIM_LISTEN": "0.0.0.0:443"])
        #expect(f.listen == HostPort(host: "::1", port: 3000))
        #expect(f.maxStreams == 10 && f.threads == 2 && !f.ledger)
        #expect(f.faults.latency == 0.005)
    }

    @Test func badOptionsAreUsageErrors() {
        for args in [["--faults", "bogus=1"], ["--listen", "nowhere:port"], ["--threads", "0"], ["--control", ""], ["extra"]] {
            #expect(CLIResult.run(["apns-sim"] + args, env: [:]).code == 2, "\(args)")
        }
    }

    @Test func startPreparesFilesServesAndPrintsTheEnvironmentForHerald() throws {
        let dir = NSTemporaryDirectory() + "herald-apns-sim-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var s = APNSSimCommand.Settings()
        s.listen = HostPort(host: "127.0.0.1", port: 0)
        s.control = HostPort(host: "127.0.0.1", port: 0)
        s.directory = dir
        let console = Console(capture: true)
        let running = try APNSSimCommand.start(s, console: console, logger: .discard)
        defer { running.stop() }
        let port = running.simulator.address.port
        #expect(port != 0)
        let files = running.files
        #expect(FileManager.default.fileExists(atPath: files.certificateFile))
        #expect(FileManager.default.fileExists(atPath: files.apnsKeyFile))
        let out = console.capturedOutput
        #expect(
            out.contains(
                "HERALD_APNS_HOST=127.0.0.1:\(port) HERALD_APNS_CA_FILE=\(dir)/sim-cert.pem "
                    + "HERALD_APNS_KEY_FILE=\(dir)/AuthKey_\(files.keyID).p8 HERALD_APNS_KEY_ID=\(files.keyID) "
                    + "HERALD_APNS_TEAM_ID=\(files.teamID)"))
        let control = try #require(running.control).address
        #expect(out.contains("control interface: http://127.0.0.1:\(control.port)"))
        // The control interface answers.
        let (data, status) = try get("http://127.0.0.1:\(control.port)/healthz")
        #expect(status == 200)
        #expect(try JSON.parse(data) == ["status": "ok"])
    }

    @Test func aTakenPortIsAFailureNamingTheAddress() throws {
        let dir = NSTemporaryDirectory() + "herald-apns-sim-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var s = APNSSimCommand.Settings()
        s.listen = HostPort(host: "127.0.0.1", port: 0)
        s.control = nil
        s.directory = dir
        let first = try APNSSimCommand.start(s, console: Console(capture: true), logger: .discard)
        defer { first.stop() }
        s.listen = first.simulator.address
        #expect(throws: CommandFailure.self) { _ = try APNSSimCommand.start(s, console: Console(capture: true), logger: .discard) }
    }

    func get(_ url: String) throws -> (Data, Int) {
        let done = DispatchSemaphore(value: 0)
        let box = Locked<(Data?, Int)>((nil, 0))
        URLSession.shared.dataTask(with: URL(string: url)!) { d, r, _ in
            box.set((d, (r as? HTTPURLResponse)?.statusCode ?? 0))
            done.signal()
        }.resume()
        done.wait()
        let (d, s) = box.get()
        return (d ?? Data(), s)
    }
}
