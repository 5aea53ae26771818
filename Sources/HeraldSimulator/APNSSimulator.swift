import Foundation
import HeraldCore
import HeraldCrypto
import HeraldNet
import Synchronization

/// A local stand-in for APNs (issue #2, design "The APNs simulator"): HTTP/2 over TLS with
/// token, broadcast and channel-management endpoints, JWT checks, APNs' status codes and
/// reasons, a ledger, and fault injection.
///
/// Thread-safe: the public methods may be called from any thread.
public final class APNSSimulator: Sendable {
    public let config: SimulatorConfig
    let loops: [EventLoop]
    let listener: HTTP2Listener
    let state: Locked<State>
    let logger: Logger
    /// Bumped (under `state`'s lock) whenever the faults or dead tokens change, so each
    /// connection re-reads them only then, not under the lock for every request.
    let faultsVersion = Atomic<Int>(0)

    struct State {
        var faults: SimulatorFaults
        var ledger = SimulatorLedger()
        var channels: [String: SimChannel] = [:]  // channel id → channel
        var deadTokens: [String: Int64] = [:]  // token → ms since which it is unregistered
        var openConnections = 0
        var connections = 0
        var teams = SimulatorTeamTraffic()
    }

    struct SimChannel: Sendable {
        var bundleID: String
        var storagePolicy: Int
        var createdAt: Double
    }

    /// Binds the listener (throws `NetError` when the address is taken) and starts serving.
    public init(config: SimulatorConfig, logger: Logger) throws {
        self.config = config
        self.logger = logger.with(subsystem: "apns-sim")
        state = Locked(State(faults: config.faults))
        loops = try (0..<max(1, config.threads)).map { try EventLoop(name: "apns-sim-\($0)") }
        let tls = try TLSContext.server(certificateChainFile: config.certificateFile, privateKeyFile: config.privateKeyFile)
        var h2 = HTTP2ServerConfig()
        h2.maxConcurrentStreams = config.streamsBeforeAuth
        h2.maxRequestBody = 16 * 1024
        let handler = SimulatorHandler()
        listener = try HTTP2Listener(
            host: config.listen.host, port: config.listen.port, loops: loops, tls: tls, config: h2, logger: logger,
            delegate: { handler })
        handler.simulator = self
        listener.start()
        self.logger.info("apns_sim.listening", ["address": .string(listener.address.description)])
    }

    /// The address the APNs endpoint listens on (the real port when 0 was asked for).
    public var address: HostPort { HostPort(host: config.listen.host, port: listener.address.port) }

    /// Stops accepting, closes connections and ends the loops. Not on a simulator loop.
    public func shutdown() {
        listener.stop()
        listener.closeAllConnections()
        for l in loops { l.shutdown() }
    }

    // MARK: - control (tests, benchmarks and the control port)

    /// Replaces the faults.
    public func setFaults(_ f: SimulatorFaults) {
        state.withLock {
            $0.faults = f
            faultsVersion.add(1, ordering: .releasing)
        }
    }
    public var faults: SimulatorFaults { state.withLock { $0.faults } }

    /// Makes `tokens` answer 410 Unregistered with `since` (ms, default now) as APNs' timestamp.
    public func markDead(_ tokens: [String], sinceMillis: Int64? = nil) {
        let ms = sinceMillis ?? config.clock.nowMillis()
        state.withLock { s in
            for t in tokens { s.deadTokens[t.lowercased()] = ms }
            faultsVersion.add(1, ordering: .releasing)
        }
    }

    /// Forgets everything received (channels stay).
    public func resetLedger() { state.withLock { $0.ledger = SimulatorLedger() } }

    /// What `token` received, in order.
    public func pushes(to token: String) -> [LedgerPush] {
        state.withLock { s in
            (s.ledger.tokens[token.lowercased()] ?? []).map {
                LedgerPush(payload: s.ledger.payloads[Int($0.payload)], priority: Int($0.priority), receivedAt: $0.receivedAt)
            }
        }
    }

    /// What was broadcast on `channelID`, in order.
    public func broadcasts(on channelID: String) -> [LedgerPush] {
        state.withLock { s in
            (s.ledger.channels[channelID] ?? []).map {
                LedgerPush(payload: s.ledger.payloads[Int($0.payload)], priority: Int($0.priority), receivedAt: $0.receivedAt)
            }
        }
    }

    /// Per token, how many pushes it received.
    public func tokenCounts() -> [String: Int] {
        state.withLock { s in s.ledger.tokens.mapValues { $0.count } }
    }

    /// Tokens whose pushes include `payload` exactly — how a test checks one event reached
    /// every subscriber.
    public func tokens(thatReceived payload: [UInt8]) -> Set<String> {
        state.withLock { s in
            guard let id = s.ledger.payloadIndex[payload] else { return [] }
            return Set(s.ledger.tokens.compactMap { k, v in v.contains { $0.payload == id } ? k : nil })
        }
    }

    /// Channels that exist, with their storage policy.
    public func channels() -> [String: Int] { state.withLock { s in s.channels.mapValues { $0.storagePolicy } } }

    public func stats() -> SimulatorStats {
        state.withLock { s in
            SimulatorStats(
                accepted: s.ledger.accepted, broadcasts: s.ledger.broadcasts, tokens: s.ledger.tokens.count,
                requests: s.ledger.requests, responses: s.ledger.responses, openConnections: s.openConnections,
                connections: s.connections, channels: s.channels.count)
        }
    }

    /// Sends GOAWAY (reason `reason`) on every open connection, then closes them (what APNs
    /// does when it restarts).
    public func goAwayAll(reason: String = "Shutdown") {
        forEachConnection { c in c.goAway(debugData: Array(#"{"reason":"\#(reason)"}"#.utf8)) }
    }

    /// Drops every connection at once (a crash of the peer).
    public func disconnectAll() { listener.closeAllConnections() }

    /// Advertises a new SETTINGS_MAX_CONCURRENT_STREAMS on every open connection.
    public func setMaxConcurrentStreams(_ n: UInt32) {
        forEachConnection { $0.updateMaxConcurrentStreams(n) }
    }

    let connections = Locked<[ObjectIdentifier: UncheckedBox<HTTP2ServerConnection>]>([:])

    func forEachConnection(_ body: @escaping (HTTP2ServerConnection) -> Void) {
        let all = connections.withLock { Array($0.values) }
        for box in all {
            let done = DispatchSemaphore(value: 0)
            let b = UncheckedBox(body)
            box.value.loop.execute {
                b.value(box.value)
                done.signal()
            }
            done.wait()
        }
    }
}
