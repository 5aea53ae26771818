import COpenSSL

/// A failed OpenSSL call, with everything OpenSSL queued about it.
///
/// OpenSSL keeps its error queue per thread, and every connection on that thread shares it
/// (reference: swift-c-interop §9). `drain` empties the queue so that a later, unrelated
/// call on the same thread does not read this failure as its own.
public struct OpenSSLError: Error, Sendable, CustomStringConvertible {
    /// What we were doing, usually the name of the OpenSSL function that failed.
    public let operation: String
    /// The first (oldest) code on the queue (`ERR_get_error`), 0 when nothing was queued.
    public let code: UInt
    /// Every queued error rendered with `ERR_error_string_n`, oldest first, joined by "; ".
    public let message: String

    public init(operation: String, code: UInt, message: String) {
        self.operation = operation
        self.code = code
        self.message = message
    }

    public var description: String {
        message.isEmpty ? "\(operation) failed" : "\(operation) failed: \(message)"
    }

    /// Empties the calling thread's OpenSSL error queue into an error for `operation`.
    /// Call it on the thread where the OpenSSL call failed.
    public static func drain(_ operation: String) -> OpenSSLError {
        var first: UInt = 0
        var parts: [String] = []
        var buffer = [CChar](repeating: 0, count: 256)
        while case let code = ERR_get_error(), code != 0 {
            if first == 0 { first = code }
            // Keep a long queue from growing without bound; the first entries say the most.
            guard parts.count < 16 else { continue }
            buffer.withUnsafeMutableBufferPointer { p in
                ERR_error_string_n(code, p.baseAddress, p.count)
                parts.append(String(cString: p.baseAddress!))
            }
        }
        return OpenSSLError(operation: operation, code: first, message: parts.joined(separator: "; "))
    }

    /// Discards the calling thread's OpenSSL error queue (`ERR_clear_error`). The TLS layer
    /// calls it before each `SSL_read`/`SSL_write`/`SSL_do_handshake`, so that a stale entry
    /// left by another connection on this thread is not taken for this call's failure.
    public static func clearQueue() {
        ERR_clear_error()
    }
}

/// The OpenSSL choke point: returns normally when `ok`, else throws the drained queue.
/// Call on the thread that made the OpenSSL call.
/// - Throws: `OpenSSLError` for `operation` when `ok` is false.
@inline(__always)
public func checkOpenSSL(_ ok: Bool, _ operation: @autoclosure () -> String) throws(OpenSSLError) {
    if !ok { throw OpenSSLError.drain(operation()) }
}

/// The choke point for calls that return a pointer: unwraps it, or throws the drained queue
/// when OpenSSL returned NULL. Call on the thread that made the OpenSSL call.
/// - Throws: `OpenSSLError` for `operation` when `value` is nil.
@inline(__always)
public func checkOpenSSL<T>(_ value: T?, _ operation: @autoclosure () -> String) throws(OpenSSLError) -> T {
    guard let value else { throw OpenSSLError.drain(operation()) }
    return value
}
