import CMicroHTTPD

// libmicrohttpd's callbacks. Each recovers the `ServerCore` from its `cls` pointer (the
// daemon keeps the core alive until `MHD_stop_daemon` returns) and the request's
// `RequestContext` from `*req_cls`. They never throw; on failure they return `.NO`, which
// makes libmicrohttpd close the connection.

/// MHD_OPTION_URI_LOG_CALLBACK: the request line is parsed. Its return value becomes
/// `*req_cls`, and from here on libmicrohttpd calls the completion callback for this
/// request whatever happens, which is where the context is released.
func mhdURILog(
    _ cls: UnsafeMutableRawPointer?, _ uri: UnsafePointer<CChar>?, _ connection: OpaquePointer?
) -> UnsafeMutableRawPointer? {
    if let connection { ServerCore.from(cls).requestArrived(connection) }
    let ctx = RequestContext(rawTarget: uri.map { String(cString: $0) } ?? "")
    return Unmanaged.passRetained(ctx).toOpaque()
}

/// The access handler: called once when headers are complete, then once per piece of body,
/// then once more with `*upload_data_size == 0` when the body is complete.
func mhdAccess(
    _ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?, _ url: UnsafePointer<CChar>?,
    _ method: UnsafePointer<CChar>?, _ version: UnsafePointer<CChar>?, _ uploadData: UnsafePointer<CChar>?,
    _ uploadSize: UnsafeMutablePointer<Int>?, _ reqCls: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
) -> MHD_Result {
    guard let connection, let uploadSize, let reqCls else { return .NO }
    let core = ServerCore.from(cls)
    let ctx: RequestContext
    if let p = reqCls.pointee {
        ctx = Unmanaged<RequestContext>.fromOpaque(p).takeUnretainedValue()
    } else {
        // Not reached while the URI-log callback is installed; kept so a context always exists.
        ctx = RequestContext(rawTarget: url.map { String(cString: $0) } ?? "")
        reqCls.pointee = Unmanaged.passRetained(ctx).toOpaque()
    }
    let upload = UnsafeRawBufferPointer(start: uploadData, count: uploadData == nil ? 0 : uploadSize.pointee)
    let result = core.access(
        ctx, connection, url: url.map { String(cString: $0) } ?? "",
        method: method.map { String(cString: $0) } ?? "", version: version.map { String(cString: $0) } ?? "",
        upload: upload)
    uploadSize.pointee = 0  // every byte offered is consumed (kept or discarded)
    return result
}

/// MHD_OPTION_NOTIFY_COMPLETED: the request is over (answered, refused, or the connection
/// died). Releases the context.
func mhdCompleted(
    _ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?,
    _ reqCls: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, _ code: MHD_RequestTerminationCode
) {
    guard let reqCls, let p = reqCls.pointee else { return }
    reqCls.pointee = nil
    let ctx = Unmanaged<RequestContext>.fromOpaque(p).takeRetainedValue()
    ServerCore.from(cls).completed(ctx, connection, code)
}

/// The accept policy, on the worker that accepted the connection: the caps and the reclaim
/// of idle connections (`ServerCore.admit`). Once `stop()` has begun, every new connection
/// is closed as soon as it is accepted. (`MHD_quiesce_daemon` would leave them to the kernel
/// to refuse, but in 0.9.75 it races the epoll worker threads over the listen socket and can
/// abort the process with MHD_PANIC; see `HTTPServer.stop()`.)
func mhdAcceptPolicy(_ cls: UnsafeMutableRawPointer?, _ address: UnsafePointer<sockaddr>?, _ length: socklen_t)
    -> MHD_Result
{
    ServerCore.from(cls).admit(address) ? .YES : .NO
}

/// MHD_OPTION_NOTIFY_CONNECTION, on the connection's worker: enters and leaves the book.
func mhdNotifyConnection(
    _ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?,
    _ socketContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, _ code: MHD_ConnectionNotificationCode
) {
    guard let connection else { return }
    let core = ServerCore.from(cls)
    switch code {
    case .CONNECTION_NOTIFY_STARTED: core.connectionOpened(connection)
    case .CONNECTION_NOTIFY_CLOSED: core.connectionClosed(connection)
    @unknown default: break
    }
}

/// MHD_OPTION_EXTERNAL_LOGGER (through the shim's trampoline): libmicrohttpd's own messages,
/// at debug level — every refusal it makes is also logged once by the completion callback.
func mhdLog(_ cls: UnsafeMutableRawPointer?, _ message: UnsafePointer<CChar>?) {
    guard let message else { return }
    let core = ServerCore.from(cls)
    let text = String(cString: message)
    core.lastLibraryMessage.withLock { $0 = text }
    core.logger.debug("http.library_message", ["message": .string(text)])
}
