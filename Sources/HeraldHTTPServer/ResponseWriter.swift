import CMicroHTTPD
import HeraldCore

/// Hands an `HTTPResponse` to libmicrohttpd. The body is copied (`MHD_RESPMEM_MUST_COPY`),
/// so nothing Swift owns is referenced once this returns.
enum ResponseWriter {
    /// Headers the server frames itself; a handler's values for them are ignored.
    static let framingHeaders: Set<String> = ["content-length", "transfer-encoding"]

    static func queue(
        _ response: HTTPResponse, on connection: OpaquePointer, closeAfter: Bool, logger: Logger
    ) -> MHD_Result {
        guard (200...999).contains(response.status) else {
            logger.error(
                "http.response_invalid", ["reason": "status out of range", "status": .int(Int64(response.status))])
            return queue(internalError(), on: connection, closeAfter: closeAfter, logger: logger)
        }
        guard let mhdResponse = build(response, closeAfter: closeAfter) else {
            logger.error("http.response_invalid", ["reason": "header refused by libmicrohttpd"])
            return queue(internalError(), on: connection, closeAfter: closeAfter, logger: logger)
        }
        defer { MHD_destroy_response(mhdResponse) }
        let rc = MHD_queue_response(connection, UInt32(response.status), mhdResponse)
        if rc == .NO { logger.error("http.response_not_queued", ["status": .int(Int64(response.status))]) }
        return rc
    }

    /// nil when libmicrohttpd refuses a header (CR/LF in a value, space in a name).
    private static func build(_ response: HTTPResponse, closeAfter: Bool) -> OpaquePointer? {
        let made = response.body.withUnsafeBytes { raw in
            MHD_create_response_from_buffer(
                raw.count, UnsafeMutableRawPointer(mutating: raw.baseAddress), .RESPMEM_MUST_COPY)
        }
        guard let r = made else { return nil }
        for (name, value) in response.headers {
            // libmicrohttpd cannot send an empty value; an absent header means the same.
            if value.isEmpty || framingHeaders.contains(name.lowercased()) { continue }
            if MHD_add_response_header(r, name, value) == .NO {
                MHD_destroy_response(r)
                return nil
            }
        }
        if closeAfter { _ = MHD_add_response_header(r, "Connection", "close") }
        return r
    }

    static func internalError() -> HTTPResponse {
        .error(500, code: "internal_error", message: "The server produced an invalid response.")
    }
}
