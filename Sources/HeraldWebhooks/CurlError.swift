import CCurl

/// A libcurl call that failed: its `CURLcode` and libcurl's sentence for it (with the
/// detail of the error buffer when libcurl filled it). The one choke point is `check`.
public struct CurlError: Error, Sendable, Equatable, CustomStringConvertible {
    public let code: Int
    public let message: String

    public var description: String { "libcurl error \(code): \(message)" }

    /// Whether the failure was a timeout (connect or whole transfer).
    public var isTimeout: Bool { code == Int(CURLE_OPERATION_TIMEDOUT.rawValue) }

    /// Whether the server's certificate was not trusted (or did not name the host).
    public var isCertificateProblem: Bool { code == Int(CURLE_PEER_FAILED_VERIFICATION.rawValue) }

    /// Throws unless `rc` is `CURLE_OK`; `detail` is libcurl's error buffer, if any.
    static func check(_ rc: CURLcode, detail: String = "") throws(CurlError) {
        guard rc != CURLE_OK else { return }
        let generic = String(cString: curl_easy_strerror(rc))
        throw CurlError(code: Int(rc.rawValue), message: detail.isEmpty ? generic : "\(generic): \(detail)")
    }
}
