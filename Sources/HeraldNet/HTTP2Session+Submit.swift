import CNghttp2

/// What the session sends: requests, responses and control frames. Each returns once
/// nghttp2 has queued (and copied) it; `produce` writes it out.
extension HTTP2Session {
    /// Queues a request. `authority` is the connection's `:authority`; `extra` and
    /// `idField` are per-request fields (a JWT, a fresh `apns-id` written into a reused
    /// buffer, valid for the call). Returns the new stream id; throws when nghttp2 refuses
    /// (e.g. `streamIDNotAvailable`, or after GOAWAY).
    func submitRequest(
        _ request: HTTP2Request, authority: UnsafeBufferPointer<UInt8>, extra: HeaderList?,
        idField: (name: StaticString, value: UnsafeBufferPointer<UInt8>)?, tag: Int = 0, started: UInt64 = 0
    ) throws(HTTP2Error) -> HTTP2StreamID {
        try submitRequest(
            method: request.method, path: Array(request.path.utf8), headers: request.headers, requestHeaders: request.requestHeaders,
            body: request.body, keepResponseHeaders: request.keepResponseHeaders, authority: authority, extra: extra,
            idField: idField, tag: tag, started: started)
    }

    /// `submitRequest` from the request's parts, borrowed (the pool's hot path: no
    /// `HTTP2Request` value, so no copy of its fields and bodies per push; the path as
    /// bytes the caller keeps).
    func submitRequest(
        method: String, path: [UInt8], headers: HeaderList, requestHeaders: HeaderList, body: HTTP2Body?,
        keepResponseHeaders: Bool, authority: UnsafeBufferPointer<UInt8>, extra: HeaderList?,
        idField: (name: StaticString, value: UnsafeBufferPointer<UInt8>)?, tag: Int, started: UInt64
    ) throws(HTTP2Error) -> HTTP2StreamID {
        let s = makeRequestStream()
        s.body = body
        s.keepHeaders = keepResponseHeaders
        s.tag = tag
        s.started = started
        let ud = s.opaque
        var method = method
        let id: Int32 = path.withUnsafeBufferPointer { pathBytes in
            method.withUTF8 { methodBytes in
                headers.bytes.withUnsafeBufferPointer { h in
                    requestHeaders.bytes.withUnsafeBufferPointer { r in
                        // Not `extra ?? empty`: that copies the list (two retains per push).
                        Self.withBytes(of: extra) { e in
                            // Written straight into a stack buffer of the exact size: no
                            // array append (uniqueness and capacity checks) per field.
                            let count =
                                4 + headers.entries.count + requestHeaders.entries.count + (extra?.entries.count ?? 0)
                                + (idField == nil ? 0 : 1)
                            return withUnsafeTemporaryAllocation(of: nghttp2_nv.self, capacity: count) { buffer in
                                var nv = HTTP2Fields.Writer(buffer.baseAddress!)
                                // Static names (the pseudo-fields', the id field's) are not copied:
                                // nghttp2 copied and lower-cased every name per request (~70
                                // instructions each). The lists' names are copied: a list may be gone
                                // before nghttp2 sends the frame.
                                nv.put(HTTP2Fields.method, methodBytes, noIndex: false, staticName: true)
                                nv.put(HTTP2Fields.scheme, HTTP2Fields.https, noIndex: false, staticName: true)
                                nv.put(HTTP2Fields.authority, authority, noIndex: false, staticName: true)
                                // A path carries a device token: out of the HPACK table (reference §1.4).
                                nv.put(HTTP2Fields.path, pathBytes, noIndex: true, staticName: true)
                                nv.put(headers.entries, h)
                                nv.put(requestHeaders.entries, r)
                                if let extra { nv.put(extra.entries, e) }
                                if let idField { nv.put(idField.name, idField.value, noIndex: true, staticName: true) }
                                let nva = UnsafePointer(buffer.baseAddress!)
                                guard body != nil else {
                                    return nghttp2_submit_request(raw, nil, nva, nv.count, nil, ud)
                                }
                                var provider = nghttp2_data_provider()
                                provider.source.ptr = ud
                                provider.read_callback = HTTP2Callbacks.readBody
                                return nghttp2_submit_request(raw, nil, nva, nv.count, &provider, ud)
                            }
                        }
                    }
                }
            }
        }
        do {
            try check(id, "nghttp2_submit_request")
        } catch {
            s.id = 0
            retire(s)
            throw error
        }
        s.id = id
        adopt(s)
        return id
    }

    /// A stream object for a request this side sends: a spare one when there is one, reset
    /// in its client part only (a client session's streams never hold a server request, so
    /// clearing that part again per push was wasted work).
    @inline(__always)
    func makeRequestStream() -> Stream {
        guard let s = spare.popLast() else { return Stream(id: 0) }
        s.resetForRequest()
        return s
    }

    /// Runs `body` with the bytes of `list`, or with no bytes when it is nil.
    @inline(__always)
    static func withBytes(of list: HeaderList?, _ body: (UnsafeBufferPointer<UInt8>) -> Int32) -> Int32 {
        // Through optional chaining: the list's buffer is borrowed, not copied out of it.
        if let rc = list?.bytes.withUnsafeBufferPointer(body) { return rc }
        return body(UnsafeBufferPointer(start: nil, count: 0))
    }

    /// Queues the response on `streamID` (a stream the peer opened). Throws when the
    /// stream is gone or already answered.
    func submitResponse(streamID: HTTP2StreamID, status: Int, headers: HeaderList, body: [UInt8]) throws(HTTP2Error) {
        guard let s = stream(streamID) else {
            throw HTTP2Error(code: NGHTTP2_ERR_INVALID_ARGUMENT.rawValue, operation: "nghttp2_submit_response")
        }
        try submitResponse(s, status: status, headers: headers, body: body)
    }

    /// `submitResponse` on a stream object the caller already holds (no lookup).
    func submitResponse(_ s: Stream, status: Int, headers: HeaderList, body: [UInt8]) throws(HTTP2Error) {
        let streamID = s.id
        s.bodyBytes = body
        s.offset = 0
        var digits: (UInt8, UInt8, UInt8) = (48, 48, 48)
        let st = max(0, min(999, status))
        digits.0 = UInt8(48 + st / 100)
        digits.1 = UInt8(48 + st / 10 % 10)
        digits.2 = UInt8(48 + st % 10)
        let rc: Int32 = withUnsafeBytes(of: &digits) { d in
            headers.bytes.withUnsafeBufferPointer { h in
                // Written straight into a stack buffer of the exact size, as a request's are.
                withUnsafeTemporaryAllocation(of: nghttp2_nv.self, capacity: 1 + headers.entries.count) { buffer in
                    var nv = HTTP2Fields.Writer(buffer.baseAddress!)
                    nv.put(HTTP2Fields.status, d.bindMemory(to: UInt8.self), noIndex: false)
                    nv.put(headers.entries, h)
                    let nva = UnsafePointer(buffer.baseAddress!)
                    guard !body.isEmpty else { return nghttp2_submit_response(raw, streamID, nva, nv.count, nil) }
                    var provider = nghttp2_data_provider()
                    provider.source.ptr = s.opaque
                    provider.read_callback = HTTP2Callbacks.readBody
                    return nghttp2_submit_response(raw, streamID, nva, nv.count, &provider)
                }
            }
        }
        try check(rc, "nghttp2_submit_response")
    }

    /// Queues RST_STREAM with `errorCode` (e.g. `HTTP2ErrorCode.refusedStream`).
    func submitReset(streamID: HTTP2StreamID, errorCode: UInt32) throws(HTTP2Error) {
        try check(
            nghttp2_submit_rst_stream(raw, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, errorCode), "nghttp2_submit_rst_stream")
    }

    /// Queues a SETTINGS frame with `settings`.
    func submitSettings(_ settings: [HTTP2Setting]) throws(HTTP2Error) {
        var iv = settings.map { s -> nghttp2_settings_entry in
            switch s {
            case .headerTableSize(let v): entry(NGHTTP2_SETTINGS_HEADER_TABLE_SIZE, v)
            case .enablePush(let on): entry(NGHTTP2_SETTINGS_ENABLE_PUSH, on ? 1 : 0)
            case .maxConcurrentStreams(let v): entry(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, v)
            case .initialWindowSize(let v): entry(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, v)
            case .maxFrameSize(let v): entry(NGHTTP2_SETTINGS_MAX_FRAME_SIZE, v)
            case .noRFC7540Priorities(let on): entry(NGHTTP2_SETTINGS_NO_RFC7540_PRIORITIES, on ? 1 : 0)
            }
        }
        try check(nghttp2_submit_settings(raw, UInt8(NGHTTP2_FLAG_NONE.rawValue), &iv, iv.count), "nghttp2_submit_settings")
    }

    private func entry(_ id: nghttp2_settings_id, _ value: UInt32) -> nghttp2_settings_entry {
        nghttp2_settings_entry(settings_id: Int32(id.rawValue), value: value)
    }

    /// Queues GOAWAY: the peer must not expect streams above `lastStreamID` processed.
    /// `debugData` is opaque (APNs puts `{"reason":…}` there, reference §1.3).
    func submitGoAway(lastStreamID: HTTP2StreamID, errorCode: UInt32, debugData: [UInt8]) throws(HTTP2Error) {
        let rc = debugData.withUnsafeBufferPointer { p in
            nghttp2_submit_goaway(raw, UInt8(NGHTTP2_FLAG_NONE.rawValue), lastStreamID, errorCode, p.baseAddress, p.count)
        }
        try check(rc, "nghttp2_submit_goaway")
    }

    /// Queues GOAWAY with the last stream nghttp2 processed, after which the session wants
    /// neither read nor write once open streams end.
    func terminate(errorCode: UInt32 = HTTP2ErrorCode.noError) throws(HTTP2Error) {
        try check(nghttp2_session_terminate_session(raw, errorCode), "nghttp2_session_terminate_session")
    }

    /// Queues a PING (the ACK arrives as `.pingAcknowledged`).
    func submitPing() throws(HTTP2Error) {
        try check(nghttp2_submit_ping(raw, UInt8(NGHTTP2_FLAG_NONE.rawValue), nil), "nghttp2_submit_ping")
    }
}

/// Building `nghttp2_nv` arrays from static names and byte ranges, without copying:
/// nghttp2 copies names and values on submit, so the pointers need only live through it.
enum HTTP2Fields {
    static let method: StaticString = ":method"
    static let scheme: StaticString = ":scheme"
    static let authority: StaticString = ":authority"
    static let path: StaticString = ":path"
    static let status: StaticString = ":status"
    static let https: StaticString = "https"
    /// A valid pointer for zero-length values.
    nonisolated(unsafe) static let empty = UnsafeMutablePointer<UInt8>.allocate(capacity: 1)

    @inline(__always)
    static func flags(_ noIndex: Bool) -> UInt8 {
        noIndex ? UInt8(NGHTTP2_NV_FLAG_NO_INDEX.rawValue) : UInt8(NGHTTP2_NV_FLAG_NONE.rawValue)
    }

    /// `flags(noIndex)`, and when `keptName`, `NGHTTP2_NV_FLAG_NO_COPY_NAME`: the name is
    /// lower case already and stays valid until nghttp2 has sent the frame or given it up
    /// (`on_frame_send` / `on_frame_not_send`), so nghttp2 neither copies nor lower-cases it.
    @inline(__always)
    static func flags(_ noIndex: Bool, keptName: Bool) -> UInt8 {
        flags(noIndex) | (keptName ? UInt8(NGHTTP2_NV_FLAG_NO_COPY_NAME.rawValue) : 0)
    }

    @inline(__always)
    static func append(_ out: inout [nghttp2_nv], _ name: StaticString, _ value: UnsafeBufferPointer<UInt8>, noIndex: Bool) {
        out.append(
            nghttp2_nv(
                name: UnsafeMutablePointer(mutating: name.utf8Start),
                value: UnsafeMutablePointer(mutating: value.baseAddress ?? UnsafePointer(empty)),
                namelen: name.utf8CodeUnitCount, valuelen: value.count, flags: flags(noIndex)))
    }

    @inline(__always)
    static func append(_ out: inout [nghttp2_nv], _ name: StaticString, _ value: StaticString, noIndex: Bool) {
        append(&out, name, UnsafeBufferPointer(start: value.utf8Start, count: value.utf8CodeUnitCount), noIndex: noIndex)
    }

    /// Writes fields into a buffer the caller sized (`count` written so far).
    struct Writer {
        let base: UnsafeMutablePointer<nghttp2_nv>
        private(set) var count = 0

        init(_ base: UnsafeMutablePointer<nghttp2_nv>) { self.base = base }

        /// `staticName`: a lower-case static name, not copied by nghttp2 (see `flags(_:keptName:)`).
        @inline(__always)
        mutating func put(_ name: StaticString, _ value: UnsafeBufferPointer<UInt8>, noIndex: Bool, staticName: Bool = false) {
            (base + count).initialize(
                to: nghttp2_nv(
                    name: UnsafeMutablePointer(mutating: name.utf8Start),
                    value: UnsafeMutablePointer(mutating: value.baseAddress ?? UnsafePointer(empty)),
                    namelen: name.utf8CodeUnitCount, valuelen: value.count, flags: flags(noIndex, keptName: staticName)))
            count += 1
        }

        @inline(__always)
        mutating func put(_ name: StaticString, _ value: StaticString, noIndex: Bool, staticName: Bool = false) {
            put(name, UnsafeBufferPointer(start: value.utf8Start, count: value.utf8CodeUnitCount), noIndex: noIndex, staticName: staticName)
        }

        @inline(__always)
        mutating func put(_ entries: [HeaderList.Entry], _ bytes: UnsafeBufferPointer<UInt8>) {
            guard let b = bytes.baseAddress else { return }
            let p = UnsafeMutablePointer(mutating: b)
            for e in entries {
                (base + count).initialize(
                    to: nghttp2_nv(
                        name: p + Int(e.nameStart), value: e.valueLen == 0 ? empty : p + Int(e.valueStart),
                        namelen: Int(e.nameLen), valuelen: Int(e.valueLen), flags: flags(e.noIndex)))
                count += 1
            }
        }
    }

    @inline(__always)
    static func append(_ out: inout [nghttp2_nv], _ entries: [HeaderList.Entry], _ bytes: UnsafeBufferPointer<UInt8>) {
        guard let base = bytes.baseAddress else { return }
        let p = UnsafeMutablePointer(mutating: base)
        for e in entries {
            out.append(
                nghttp2_nv(
                    name: p + Int(e.nameStart), value: e.valueLen == 0 ? empty : p + Int(e.valueStart), namelen: Int(e.nameLen),
                    valuelen: Int(e.valueLen), flags: flags(e.noIndex)))
        }
    }
}

extension HTTP2Session.Stream {
    /// Back to a fresh state for stream `id`, but for the server request's part (a client's
    /// streams leave it empty): `reset(id:)` is this plus that part.
    @inline(__always)
    func resetForRequest(id: HTTP2StreamID = 0) {
        self.id = id
        tag = 0
        started = 0
        body = nil
        if !bodyBytes.isEmpty { bodyBytes = [] }
        offset = 0
        status = 0
        if !headers.isEmpty { headers = [] }
        if !responseBody.isEmpty { responseBody = [] }
        keepHeaders = true
        unanswered = false
        response = HTTP2ResponseCheck()
    }
}
