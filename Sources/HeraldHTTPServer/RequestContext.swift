/// What the server knows about one request while libmicrohttpd works on it. Created in the
/// URI-log callback (so that even requests libmicrohttpd rejects reach the completion
/// callback), retained through `*req_cls`, released in the completion callback.
///
/// Confined to the connection's worker thread: libmicrohttpd calls every callback of one
/// connection on the same thread, one at a time.
final class RequestContext {
    enum Phase {
        /// Request line seen; headers not yet complete.
        case awaitingHeaders
        /// Headers complete (the handler path has begun); body arriving into `body`.
        case receivingBody
        /// The body crossed `maxBodyBytes`; further bytes are counted and thrown away so that
        /// a 413 can be sent once the upload ends (libmicrohttpd 0.9.75 cannot queue a
        /// response in the middle of an upload).
        case discardingBody(discarded: Int)
        /// A response is queued.
        case answered
        /// The server closed the connection without an answer (already logged and counted).
        case dropped
    }

    /// The request target exactly as received (path and query, still percent-encoded).
    let rawTarget: String
    var phase: Phase = .awaitingHeaders
    var body: [UInt8] = []
    /// True when the connection closes after this request (the client asked, or HTTP/1.0
    /// without keep-alive): it is then not idle between the response and the close.
    var closesAfter = false
    /// True once counted in `InFlightRequests`.
    var inFlight = false
    /// The status and code of a refusal by this server, for the completion log line.
    var refusal: (status: Int, code: String)?

    init(rawTarget: String) {
        self.rawTarget = rawTarget
    }

    /// `rawTarget` split at the first `?`.
    var rawPathAndQuery: (path: String, query: String) {
        guard let q = rawTarget.firstIndex(of: "?") else { return (rawTarget, "") }
        return (String(rawTarget[..<q]), String(rawTarget[rawTarget.index(after: q)...]))
    }
}
