/// A stream id on one HTTP/2 connection.
public typealias HTTP2StreamID = Int32

/// A SETTINGS parameter this side advertises (RFC 9113 §6.5.2).
public enum HTTP2Setting: Sendable, Equatable {
    case headerTableSize(UInt32)
    case enablePush(Bool)
    case maxConcurrentStreams(UInt32)
    case initialWindowSize(UInt32)
    case maxFrameSize(UInt32)
    /// SETTINGS_NO_RFC7540_PRIORITIES (RFC 9218 §2.1): this side ignores RFC 7540's
    /// stream dependencies, so nghttp2 keeps no priority tree and no closed streams for it.
    case noRFC7540Priorities(Bool)
}

/// What an `HTTP2Session` reports after it read or wrote: recorded by the nghttp2
/// callbacks, handed to the caller once nghttp2 has returned (so the caller may submit or
/// close while handling them).
enum HTTP2Event {
    /// Server: a request is complete (END_STREAM received).
    case request(HTTP2ServerRequest)
    /// Client: the stream ended cleanly after a response; `tag` as submitted.
    case response(HTTP2StreamID, HTTP2Response, tag: Int)
    /// A stream closed. Client: without a complete response (`errorCode` says why:
    /// `refusedStream` means not processed). Server: every stream, when it goes.
    case streamClosed(HTTP2StreamID, errorCode: UInt32, tag: Int)
    /// The peer's SETTINGS frame (not an ACK) was applied; the values now in force.
    case settings(maxConcurrentStreams: Int, initialWindowSize: Int)
    /// The peer sent GOAWAY. nghttp2 closes the streams above `lastStreamID` as
    /// REFUSED_STREAM (reported as `streamClosed` after this event).
    case goAway(lastStreamID: HTTP2StreamID, errorCode: UInt32, debugData: [UInt8])
    /// The peer answered our PING.
    case pingAcknowledged
}
