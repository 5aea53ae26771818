import CNghttp2

/// nghttp2's callbacks for `HTTP2Session`, all in one place. Each is `@convention(c)`,
/// recovers the session from `user_data` with `Unmanaged` (unretained: the session owns
/// the nghttp2 handle, so it outlives every callback), never throws or blocks, and only
/// records: state into the session's streams, events into its `sink`.
enum HTTP2Callbacks {
    static func install(_ cbs: OpaquePointer?, role: HTTP2Session.Role) {
        if role == .server { nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, beginHeaders) }
        nghttp2_session_callbacks_set_on_header_callback(cbs, role == .server ? serverHeader : clientHeader)
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, dataChunk)
        nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, frameReceived)
        nghttp2_session_callbacks_set_on_stream_close_callback(cbs, streamClosed)
    }

    /// Runs `body` with the stream nghttp2 knows by `id` in `raw`, borrowed: no retain and
    /// release per header or DATA chunk (the session's `streams` keeps it alive, and the
    /// callback runs inside the session's own call).
    @inline(__always)
    static func withStream<R>(_ raw: OpaquePointer?, _ id: Int32, _ body: (HTTP2Session.Stream) -> R) -> R? {
        guard let raw, let p = nghttp2_session_get_stream_user_data(raw, id) else { return nil }
        return Unmanaged<HTTP2Session.Stream>.fromOpaque(p)._withUnsafeGuaranteedRef(body)
    }

    /// Runs `body` with the session of `ud`, borrowed (it owns the nghttp2 handle).
    @inline(__always)
    static func withSession<R>(_ ud: UnsafeMutableRawPointer?, _ body: (HTTP2Session) -> R) -> R {
        Unmanaged<HTTP2Session>.fromOpaque(ud!)._withUnsafeGuaranteedRef(body)
    }

    /// Server: a peer-opened stream starts.
    static let beginHeaders: nghttp2_on_begin_headers_callback = { _, frame, ud in
        guard let frame, frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue),
            frame.pointee.headers.cat == NGHTTP2_HCAT_REQUEST
        else { return 0 }
        let id = frame.pointee.hd.stream_id
        return withSession(ud) { c in
            let s = c.makeStream(id)
            c.adopt(s)
            c.headerStream = Unmanaged.passUnretained(s)
            // Fails only for a stream nghttp2 does not know, which it just announced.
            guard nghttp2_session_set_stream_user_data(c.raw, id, s.opaque) == 0 else {
                return Int32(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue)
            }
            return 0
        }
    }

    /// Client: the field is checked (`HTTP2ResponseCheck`: nghttp2's HTTP messaging is off),
    /// `:status` parsed without a String; other fields kept when asked for, or when the
    /// answer is not a success (their reason matters). A malformed field resets the stream
    /// as nghttp2 would: RST_STREAM(PROTOCOL_ERROR), no more fields of the block, no answer.
    /// A response's fields arrive one after another for one stream: the session keeps the
    /// stream of the last field (`headerStream`), so only a block's first field looks it up
    /// in nghttp2's stream map.
    static let clientHeader: nghttp2_on_header_callback = { raw, frame, name, namelen, value, valuelen, _, ud in
        guard let frame, frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue), let name, let value else { return 0 }
        let id = frame.pointee.hd.stream_id
        let (cached, own) = withSession(ud) { c -> (Unmanaged<HTTP2Session.Stream>?, Bool) in
            if let u = c.headerStream, u._withUnsafeGuaranteedRef({ $0.id == id }) { return (u, c.checksResponses) }
            guard let raw, let p = nghttp2_session_get_stream_user_data(raw, id) else { return (nil, c.checksResponses) }
            let u = Unmanaged<HTTP2Session.Stream>.fromOpaque(p)
            c.headerStream = u
            return (u, c.checksResponses)
        }
        guard let cached else { return 0 }
        let ok = cached._withUnsafeGuaranteedRef { s -> Bool in
            let n = UnsafeBufferPointer(start: name, count: namelen)
            if own {
                let trailer = s.response.isTrailer(laterBlock: frame.pointee.headers.cat == NGHTTP2_HCAT_HEADERS)
                switch s.response.field(n, UnsafeBufferPointer(start: value, count: valuelen), trailer: trailer) {
                case .keep: break
                case .drop: return true
                case .malformed: return false
                }
            }
            // The one pseudo-header of a response (RFC 9113 §8.3.2; checked: three digits).
            if namelen == 7 && name[0] == 58 && name[1] == 115 {
                var status = 0
                for i in 0..<valuelen { status = status * 10 + Int(value[i] &- 48) }
                s.status = status
            } else if (s.keepHeaders || s.status >= 300 || s.status == 0) && s.headers.count < 32 {
                s.headers.append(
                    (
                        String(decoding: n, as: UTF8.self),
                        String(decoding: UnsafeBufferPointer(start: value, count: valuelen), as: UTF8.self)
                    ))
            }
            return true
        }
        if ok { return 0 }
        reject(raw, id)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue
    }

    /// Server: the field is checked (`HTTP2RequestCheck`: nghttp2's HTTP messaging is off)
    /// and copied into the request's one buffer (no String per field). The stream is the one
    /// whose headers began (`headerStream`) when the ids agree, else nghttp2's (trailers of
    /// another stream). A malformed field resets the stream as nghttp2 would: RST_STREAM
    /// (PROTOCOL_ERROR), and no more fields of the block.
    static let serverHeader: nghttp2_on_header_callback = { raw, frame, name, namelen, value, valuelen, _, ud in
        guard let frame, let name, let value else { return 0 }
        let id = frame.pointee.hd.stream_id
        let n = UnsafeBufferPointer(start: name, count: namelen)
        let v = UnsafeBufferPointer(start: value, count: valuelen)
        let trailer = frame.pointee.headers.cat == NGHTTP2_HCAT_HEADERS
        let (cached, own) = withSession(ud) { ($0.headerStream, $0.checksRequests) }
        let ok: Bool
        if let cached, cached._withUnsafeGuaranteedRef({ $0.id == id }) {
            ok = cached._withUnsafeGuaranteedRef { accept($0, n, v, trailer, own) }
        } else {
            ok = withStream(raw, id) { accept($0, n, v, trailer, own) } ?? true
        }
        if ok { return 0 }
        reject(raw, id)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue
    }

    @inline(__always)
    static func accept(
        _ s: HTTP2Session.Stream, _ n: UnsafeBufferPointer<UInt8>, _ v: UnsafeBufferPointer<UInt8>, _ trailer: Bool, _ own: Bool
    ) -> Bool {
        let kind = own ? s.check.field(n, v, trailer: trailer) : HTTP2ServerRequest.kind(of: n)
        guard kind != .malformed else { return false }
        s.request.add(kind, name: n, value: v)
        return true
    }

    /// A malformed request: RST_STREAM(PROTOCOL_ERROR), as nghttp2's own checks answer (its
    /// `session_handle_invalid_stream2`); nghttp2 marks the stream closing, so none of its
    /// later frames reach the callbacks. Fails only without memory, which nghttp2 reports
    /// on its next call.
    static func reject(_ raw: OpaquePointer?, _ id: Int32) {
        _ = nghttp2_submit_rst_stream(raw, UInt8(NGHTTP2_FLAG_NONE.rawValue), id, NGHTTP2_PROTOCOL_ERROR.rawValue)
    }

    /// Server: the end of a HEADERS frame (a request's or its trailers'), checked; true when
    /// the request may go on. A request's `priority` field takes effect here, as it does
    /// when nghttp2 checks the request itself (`session_end_stream_headers_received`).
    static func headersEnded(_ raw: OpaquePointer?, _ frame: UnsafePointer<nghttp2_frame>, _ s: HTTP2Session.Stream) -> Bool {
        let end = frame.pointee.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
        guard frame.pointee.headers.cat == NGHTTP2_HCAT_REQUEST else {
            if s.check.trailersEnded(endStream: end) { return true }
            reject(raw, s.id)
            return false
        }
        guard s.check.headersEnded(endStream: end) else {
            reject(raw, s.id)
            return false
        }
        if s.check.flags & HTTP2RequestCheck.priority != 0 {
            var e = nghttp2_extpri(urgency: UInt32(s.check.urgency), inc: s.check.incremental ? 1 : 0)
            _ = nghttp2_session_change_extpri_stream_priority(raw, s.id, &e, 0)
        }
        return true
    }

    /// Client: a response's HEADERS frame ended (its headers, a 1xx's or its trailers), or a
    /// DATA frame that ends the stream; checked, true when the answer may go on. nghttp2
    /// may close the stream before the RST_STREAM goes out (both sides ended): the stream
    /// stays marked malformed, so it ends as reset, not answered.
    static func responseFrameEnded(_ raw: OpaquePointer?, _ frame: UnsafePointer<nghttp2_frame>, _ s: HTTP2Session.Stream) -> Bool {
        guard !s.response.isMalformed else { return false }
        let hd = frame.pointee.hd
        let end = hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
        let ok: Bool
        if hd.type == UInt8(NGHTTP2_HEADERS.rawValue) {
            ok =
                s.response.isTrailer(laterBlock: frame.pointee.headers.cat == NGHTTP2_HCAT_HEADERS)
                ? s.response.trailersEnded(endStream: end) : s.response.headersEnded(endStream: end)
        } else {
            ok = s.response.ended()
        }
        if !ok { reject(raw, s.id) }
        return ok
    }

    static let dataChunk: nghttp2_on_data_chunk_recv_callback = { raw, _, streamID, data, len, ud in
        guard let data else { return 0 }
        let (server, maxBody, own) = withSession(ud) { ($0.role == .server, $0.maxBodyBytes, $0.checksRequests || $0.checksResponses) }
        withStream(raw, streamID) { s in
            let chunk = UnsafeBufferPointer(start: data, count: len)
            if server {
                // More DATA than `content-length`: reset (nghttp2_http_on_data_chunk).
                guard !own || s.check.data(len) else { return reject(raw, streamID) }
                s.request.appendBody(chunk, limit: maxBody)
            } else {
                // The same for a response, and DATA after a 1xx; nothing once it is reset.
                if own {
                    guard !s.response.isMalformed else { return }
                    guard s.response.data(len) else { return reject(raw, streamID) }
                }
                let room = maxBody - s.responseBody.count
                if room > 0 { s.responseBody.append(contentsOf: chunk.prefix(room)) }
            }
        }
        return 0
    }

    static let frameReceived: nghttp2_on_frame_recv_callback = { raw, frame, ud in
        guard let frame else { return 0 }
        let hd = frame.pointee.hd
        // The hot case, a request's last frame, borrows the session and the stream.
        if hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
            && (hd.type == UInt8(NGHTTP2_HEADERS.rawValue) || hd.type == UInt8(NGHTTP2_DATA.rawValue))
        {
            withSession(ud) { c in
                guard c.role == .server else {
                    if c.checksResponses { withStream(raw, hd.stream_id) { s in _ = responseFrameEnded(raw, frame, s) } }
                    return
                }
                withStream(raw, hd.stream_id) { s in
                    if c.checksRequests {
                        if hd.type == UInt8(NGHTTP2_HEADERS.rawValue) {
                            guard headersEnded(raw, frame, s) else { return }
                        } else if !s.check.ended() {
                            // Fewer DATA bytes than `content-length` (nghttp2_http_on_remote_end_stream).
                            return reject(raw, hd.stream_id)
                        }
                    }
                    c.sink.append(.request(s.request))
                }
            }
            return 0
        }
        // Borrowed too: a request's HEADERS frame (its DATA follows) comes this way, once per
        // request; the session taken out of `ud` was retained and released for each.
        withSession(ud) { c in
            let ack = hd.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) != 0
            switch UInt32(hd.type) {
            case NGHTTP2_SETTINGS.rawValue where !ack:
                c.sink.append(.settings(maxConcurrentStreams: c.peerMaxConcurrentStreams, initialWindowSize: c.peerInitialWindowSize))
            case NGHTTP2_GOAWAY.rawValue:
                let g = frame.pointee.goaway
                var data: [UInt8] = []
                if let p = g.opaque_data, g.opaque_data_len > 0 { data = Array(UnsafeBufferPointer(start: p, count: g.opaque_data_len)) }
                c.sink.append(.goAway(lastStreamID: g.last_stream_id, errorCode: g.error_code, debugData: data))
            case NGHTTP2_PING.rawValue where ack:
                c.sink.append(.pingAcknowledged)
            case NGHTTP2_HEADERS.rawValue where c.checksRequests:
                // A request's headers (or trailers) without END_STREAM: checked when they end.
                withStream(raw, hd.stream_id) { s in _ = headersEnded(raw, frame, s) }
            case NGHTTP2_HEADERS.rawValue where c.checksResponses:
                // A response's headers (a 1xx's, or the final's before its DATA).
                withStream(raw, hd.stream_id) { s in _ = responseFrameEnded(raw, frame, s) }
            default:
                break
            }
        }
        return 0
    }

    /// The session and stream borrowed (no retain per answer); the response's fields and
    /// body are moved into the event with the caller's tag, not copied (the stream is
    /// retired, its next use starts empty).
    static let streamClosed: nghttp2_on_stream_close_callback = { raw, streamID, errorCode, ud in
        withSession(ud) { c in
            withStream(raw, streamID) { s in
                if c.role == .client && s.status != 0 && errorCode == 0 && !s.response.isMalformed {
                    var headers: [(String, String)] = []
                    var body: [UInt8] = []
                    swap(&headers, &s.headers)
                    swap(&body, &s.responseBody)
                    c.sink.append(.response(streamID, HTTP2Response(status: s.status, headers: headers, body: body), tag: s.tag))
                } else {
                    // A response found malformed, closed by nghttp2 before its reset went out.
                    let code = errorCode == 0 && s.response.isMalformed ? NGHTTP2_PROTOCOL_ERROR.rawValue : errorCode
                    c.sink.append(.streamClosed(streamID, errorCode: code, tag: s.tag))
                }
                c.retire(s)
            }
        }
        return 0
    }

    /// Copies the next part of a body we send; nghttp2 may offer less than the rest (flow
    /// control), so the stream keeps an offset (interop notes §8).
    static let readBody: nghttp2_data_source_read_callback = { _, streamID, buf, length, flags, source, ud in
        guard let flags else { return Int(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue) }
        // The stream rides in the source (set at submit): no lookup per DATA frame.
        guard let p = source?.pointee.ptr, let buf else {
            flags.pointee |= UInt32(NGHTTP2_DATA_FLAG_EOF.rawValue)
            return 0
        }
        // Borrowed: the session's `streams` keeps it alive while nghttp2 sends its body.
        return Unmanaged<HTTP2Session.Stream>.fromOpaque(p)._withUnsafeGuaranteedRef { s in
            let total = s.sendCount
            let n = min(length, total - s.offset)
            if n > 0 {
                // Through optional chaining: the shared body is borrowed, not retained per frame.
                if s.body != nil {
                    s.body?.bytes.withUnsafeBufferPointer { src in buf.update(from: src.baseAddress! + s.offset, count: n) }
                } else {
                    s.bodyBytes.withUnsafeBufferPointer { src in buf.update(from: src.baseAddress! + s.offset, count: n) }
                }
            }
            s.offset += n
            if s.offset == total { flags.pointee |= UInt32(NGHTTP2_DATA_FLAG_EOF.rawValue) }
            return n
        }
    }
}
