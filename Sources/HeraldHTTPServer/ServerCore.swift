import HeraldCore
import Synchronization

/// The state libmicrohttpd's callbacks reach through their `cls` pointer: the handler, the
/// limits and the counters. Immutable apart from atomics and its own locks, so every worker
/// thread may use it at once.
final class ServerCore: Sendable {
    let handler: any HTTPHandler
    let logger: Logger
    let maxBodyBytes: Int
    /// How many bytes past `maxBodyBytes` a chunked upload may still send (and have thrown
    /// away) to receive its 413; beyond that the connection is closed without an answer.
    let discardAllowance: Int

    /// Every open connection and the caps (see `ServerCore+Connections.swift`).
    let book: Locked<ConnectionBook>
    /// When each kind of refusal or reclaim was last logged at warning level.
    let limitLog = Locked(LimitLog())
    let requests = Atomic<UInt64>(0)
    let rejected = Atomic<UInt64>(0)
    let aborted = Atomic<UInt64>(0)
    let inFlight = InFlightRequests()
    /// Set by `stop()`: responses then carry `Connection: close`.
    let draining = Atomic<Bool>(false)
    /// libmicrohttpd's last log line, reported when `MHD_start_daemon` fails.
    let lastLibraryMessage = Locked<String>("")

    static let discardAllowanceFloor = 1 << 20

    init(handler: any HTTPHandler, logger: Logger, config: HTTPServerConfig) {
        self.handler = handler
        self.logger = logger
        self.maxBodyBytes = config.maxBodyBytes
        self.book = Locked(
            ConnectionBook(
                limits: .init(
                    maxConnections: config.maxConnections, perAddress: config.perIPConnectionLimit,
                    closingAllowance: config.closingAllowance)))
        self.discardAllowance = max(config.maxBodyBytes, Self.discardAllowanceFloor)
    }

    var unmanaged: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    static func from(_ p: UnsafeMutableRawPointer?) -> ServerCore {
        Unmanaged<ServerCore>.fromOpaque(p!).takeUnretainedValue()
    }

    /// A request this server refuses before any handler runs. Counted, logged once.
    func refuse(
        _ ctx: RequestContext, _ connection: OpaquePointer, method: String, status: Int, code: String,
        message: String
    ) -> HTTPResponse {
        rejected.add(1, ordering: .relaxed)
        ctx.refusal = (status, code)
        logger.warning(
            "http.request_rejected",
            [
                "status": .int(Int64(status)), "code": .string(code), "method": .string(method),
                "remote": .string(ConnectionValues.remoteAddress(connection)),
            ])
        return .error(status, code: code, message: message)
    }
}
