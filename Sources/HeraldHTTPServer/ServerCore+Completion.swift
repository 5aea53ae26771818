import CMicroHTTPD
import HeraldCore

extension ServerCore {
    /// The completion callback's work: close the in-flight count and log, once, any request
    /// that ended without a response from us.
    func completed(_ ctx: RequestContext, _ connection: OpaquePointer?, _ code: MHD_RequestTerminationCode) {
        if ctx.inFlight { inFlight.end() }
        // A request on a reclaimed connection is counted as reclaimed (reading_request).
        // After any other ending than a complete answer libmicrohttpd closes the connection.
        let keepsOpen = code == .REQUEST_TERMINATED_COMPLETED_OK && !ctx.closesAfter && !draining.load(ordering: .relaxed)
        if let connection, requestEnded(connection, keepsOpen: keepsOpen) { return }
        switch ctx.phase {
        case .answered:
            if code != .REQUEST_TERMINATED_COMPLETED_OK {
                logger.debug("http.response_incomplete", ["reason": .string(Self.reason(code))])
            }
        case .dropped:
            break  // counted and logged when dropped
        case .awaitingHeaders, .receivingBody, .discardingBody:
            let remote = connection.map(ConnectionValues.remoteAddress) ?? ""
            if code == .REQUEST_TERMINATED_WITH_ERROR {
                // libmicrohttpd refused the request itself (malformed header or chunk,
                // header too large…) and sent its own small error page.
                rejected.add(1, ordering: .relaxed)
                logger.warning(
                    "http.request_rejected",
                    ["code": "malformed_request", "answered_by": "libmicrohttpd", "remote": .string(remote)])
            } else {
                aborted.add(1, ordering: .relaxed)
                logger.debug("http.request_aborted", ["reason": .string(Self.reason(code)), "remote": .string(remote)])
            }
        }
    }

    static func reason(_ code: MHD_RequestTerminationCode) -> String {
        switch code {
        case .REQUEST_TERMINATED_COMPLETED_OK: "completed"
        case .REQUEST_TERMINATED_WITH_ERROR: "error"
        case .REQUEST_TERMINATED_TIMEOUT_REACHED: "timeout"
        case .REQUEST_TERMINATED_DAEMON_SHUTDOWN: "shutdown"
        case .REQUEST_TERMINATED_READ_ERROR: "read_error"
        case .REQUEST_TERMINATED_CLIENT_ABORT: "client_abort"
        @unknown default: "unknown"
        }
    }
}
