import CMicroHTTPD
import HeraldCore

extension ServerCore {
    /// One access-handler call (see `mhdAccess`). Runs on the connection's worker thread.
    func access(
        _ ctx: RequestContext, _ connection: OpaquePointer, url: String, method: String, version: String,
        upload: UnsafeRawBufferPointer
    ) -> MHD_Result {
        switch ctx.phase {
        case .awaitingHeaders:
            ctx.phase = .receivingBody
            ctx.closesAfter = Self.closesAfter(version: version, connection: ConnectionValues.header(connection, "Connection"))
            ctx.inFlight = true
            inFlight.begin()
            requests.add(1, ordering: .relaxed)
            if let refusal = earlyRefusal(ctx, connection, method: method) {
                return answer(ctx, connection) { refusal }
            }
            return .YES

        case .receivingBody where !upload.isEmpty:
            if ctx.body.count + upload.count > maxBodyBytes {
                ctx.body = []  // free it now; only the count of what follows matters
                ctx.phase = .discardingBody(discarded: upload.count)
            } else {
                ctx.body.append(contentsOf: upload)
            }
            return .YES

        case .receivingBody:
            return answer(ctx, connection) {
                let request = makeRequest(ctx, connection, url: url, method: method)
                ctx.body = []
                return handler.handle(request)
            }

        case .discardingBody(let discarded) where !upload.isEmpty:
            let total = discarded + upload.count
            guard total <= discardAllowance else {
                ctx.phase = .dropped
                rejected.add(1, ordering: .relaxed)
                logger.warning(
                    "http.request_rejected",
                    [
                        "status": 413, "code": "request_too_large", "method": .string(method),
                        "remote": .string(ConnectionValues.remoteAddress(connection)),
                        "closed": "the body kept coming past the limit; connection closed unanswered",
                    ])
                return .NO
            }
            ctx.phase = .discardingBody(discarded: total)
            return .YES

        case .discardingBody:
            return answer(ctx, connection) { tooLarge(ctx, connection, method: method) }

        case .answered, .dropped:
            return .YES
        }
    }

    /// Runs `respond` (the handler, or a refusal) and queues its response — unless the
    /// connection is being reclaimed, which it can no longer be once this has begun.
    private func answer(_ ctx: RequestContext, _ connection: OpaquePointer, _ respond: () -> HTTPResponse)
        -> MHD_Result
    {
        guard responding(connection) else {
            ctx.phase = .dropped  // counted as reclaimed
            return .NO
        }
        let response = respond()
        ctx.phase = .answered
        return ResponseWriter.queue(
            response, on: connection, closeAfter: draining.load(ordering: .relaxed), logger: logger)
    }

    /// Whether the connection ends with this request: `Connection: close`, or HTTP/1.0
    /// without `Connection: keep-alive` (RFC 9112 §9.3).
    static func closesAfter(version: String, connection: String?) -> Bool {
        let tokens = (connection ?? "").lowercased().split(separator: ",").map { String(String($0).trimmingSpaces) }
        if tokens.contains("close") { return true }
        return version == "HTTP/1.0" && !tokens.contains("keep-alive")
    }

    /// Checks made as soon as headers are complete, before reading any body.
    private func earlyRefusal(_ ctx: RequestContext, _ connection: OpaquePointer, method: String) -> HTTPResponse? {
        if let te = ConnectionValues.header(connection, "Transfer-Encoding") {
            // libmicrohttpd decodes only "chunked"; any other coding would be read until
            // the peer closes, with no length to check.
            guard te.trimmingSpaces.lowercased() == "chunked" else {
                return refuse(
                    ctx, connection, method: method, status: 501, code: "unsupported_transfer_encoding",
                    message: "Only the chunked transfer coding is supported.")
            }
        } else if let cl = ConnectionValues.header(connection, "Content-Length"),
            let length = UInt64(cl.trimmingSpaces), length > UInt64(maxBodyBytes)
        {
            return tooLarge(ctx, connection, method: method)
        }
        // libmicrohttpd decodes the path into a C string: %00 would silently cut it short.
        if ctx.rawPathAndQuery.path.lowercased().contains("%00") {
            return refuse(
                ctx, connection, method: method, status: 400, code: "invalid_path",
                message: "The request path contains an encoded NUL byte.")
        }
        return nil
    }

    private func tooLarge(_ ctx: RequestContext, _ connection: OpaquePointer, method: String) -> HTTPResponse {
        refuse(
            ctx, connection, method: method, status: 413, code: "request_too_large",
            message: "The request body is larger than \(maxBodyBytes) bytes.")
    }

    private func makeRequest(_ ctx: RequestContext, _ connection: OpaquePointer, url: String, method: String)
        -> HTTPRequest
    {
        let (rawPath, rawQuery) = ctx.rawPathAndQuery
        var request = HTTPRequest(method: method, path: url)
        request.rawPath = rawPath
        request.rawQuery = rawQuery
        request.query = ConnectionValues.query(connection)
        request.headers = ConnectionValues.headers(connection)
        request.body = ctx.body
        request.remoteAddress = ConnectionValues.remoteAddress(connection)
        return request
    }
}

extension String {
    /// Without leading and trailing spaces and tabs (HTTP's optional whitespace).
    var trimmingSpaces: Substring {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" { s.removeFirst() }
        while let l = s.last, l == " " || l == "\t" { s.removeLast() }
        return s
    }
}
