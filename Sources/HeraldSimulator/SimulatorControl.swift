import HeraldCore
import HeraldHTTPServer
import HeraldNet

/// The simulator's control and ledger interface: JSON over HTTP/1.1 on its own (loopback)
/// port, over the public methods of `APNSSimulator`. Tests, benchmarks and `herald demo`
/// read what each token received and inject faults through it.
///
/// Routes (errors in Herald's shape `{"error":{"code","message"}}`):
/// `GET /healthz`, `GET /stats`, `GET /tokens`, `GET /tokens/{hex}`, `GET /channels`,
/// `GET /channels/{id}/broadcasts` (the base64 id percent-encoded), `GET|PUT /faults`,
/// `POST /dead-tokens`, `POST /reset`, `POST /goaway`, `POST /disconnect`, `PUT /settings`,
/// `POST /channels` (plants channels: `{"bundle_id","count"?,"storage_policy"?}` → 201
/// with their ids), `DELETE /channels/{id}` (behind the client's back), `GET /teams`
/// (connections and requests per team, with `otherTeams`).
///
/// Thread-safe; `stop()` must not be called from a request handler.
public final class SimulatorControl: Sendable {
    public let simulator: APNSSimulator
    private let server: HTTPServer

    /// Binds `listen` (port 0: a free port, see `address`) and starts serving. Throws
    /// `HTTPServerError` when the address is taken or invalid.
    public init(simulator: APNSSimulator, listen: HostPort, logger: Logger) throws {
        self.simulator = simulator
        guard (0...65535).contains(listen.port) else {
            throw HTTPServerError.invalidConfig(field: "port", reason: "must be 0…65535, got \(listen.port)")
        }
        let config = HTTPServerConfig(host: listen.host, port: UInt16(listen.port), threads: 2, maxBodyBytes: 16 << 20)
        server = try HTTPServer(
            config: config, logger: logger.with(subsystem: "apns-sim-control"),
            handler: SimulatorControlRoutes(simulator: simulator))
        try server.start()
    }

    /// Where the control interface listens (the real port when 0 was asked for).
    public var address: HostPort { HostPort(host: server.boundAddress, port: Int(server.port)) }

    /// Stops serving (idempotent).
    public func stop() { server.stop() }
}
