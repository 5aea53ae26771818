import CNghttp2

/// An error nghttp2 returned: its code (`NGHTTP2_ERR_*`, negative) and the call that
/// failed. Thrown by `HTTP2Session`'s one choke point, `check(_:_:)`.
public struct HTTP2Error: Error, Sendable, Equatable, CustomStringConvertible {
    /// nghttp2's error code (negative).
    public let code: Int32
    /// The nghttp2 function that returned it.
    public let operation: String

    public init(code: Int32, operation: String) {
        self.code = code
        self.operation = operation
    }

    /// nghttp2's own text for the code.
    public var message: String { String(cString: nghttp2_strerror(code)) }

    /// True when the session cannot be used any more (nghttp2_is_fatal).
    public var isFatal: Bool { nghttp2_is_fatal(code) != 0 }

    public var description: String { "\(operation): \(message) (\(code))" }

    /// `NGHTTP2_ERR_INVALID_ARGUMENT`.
    public static let invalidArgument = NGHTTP2_ERR_INVALID_ARGUMENT.rawValue
    /// `NGHTTP2_ERR_STREAM_ID_NOT_AVAILABLE`: the connection ran out of stream ids.
    public static let streamIDNotAvailable = NGHTTP2_ERR_STREAM_ID_NOT_AVAILABLE.rawValue
    /// `NGHTTP2_ERR_BAD_CLIENT_MAGIC`: a server received something other than the preface.
    public static let badClientMagic = NGHTTP2_ERR_BAD_CLIENT_MAGIC.rawValue
    /// `NGHTTP2_ERR_CALLBACK_FAILURE`.
    public static let callbackFailure = NGHTTP2_ERR_CALLBACK_FAILURE.rawValue
}

/// HTTP/2 error codes sent in RST_STREAM and GOAWAY (RFC 9113 §7).
public enum HTTP2ErrorCode {
    public static let noError: UInt32 = 0
    public static let protocolError: UInt32 = 1
    public static let internalError: UInt32 = 2
    public static let refusedStream: UInt32 = 7
    public static let cancel: UInt32 = 8
}
