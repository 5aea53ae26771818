/// Answers requests. Called on libmicrohttpd's worker threads — several at once, one per
/// worker — with the complete body. It may block (waiting for a database commit, say): the
/// worker's other connections wait meanwhile, so `HTTPServerConfig.threads` bounds how many
/// requests can block at the same time. It must not call `HTTPServer.stop()`.
public protocol HTTPHandler: Sendable {
    func handle(_ request: HTTPRequest) -> HTTPResponse
}

/// A handler made of a closure (tests, small control ports).
public struct HTTPHandlerFunction: HTTPHandler {
    let body: @Sendable (HTTPRequest) -> HTTPResponse

    public init(_ body: @escaping @Sendable (HTTPRequest) -> HTTPResponse) {
        self.body = body
    }

    public func handle(_ request: HTTPRequest) -> HTTPResponse { body(request) }
}
