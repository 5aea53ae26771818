import CCurl
import Glibc
import HeraldCore

/// How webhook posts are made. Every step has a deadline.
public struct WebhookPosterConfig: Sendable {
    /// TCP + TLS handshake, at most. Default 5 s.
    public var connectTimeout: Double = 5
    /// The whole exchange, connect included. Default 10 s.
    public var totalTimeout: Double = 10
    /// Response bytes read at most; the rest is discarded (Herald needs the status only).
    public var maxResponseBytes = 64 << 10
    /// PEM file of CA certificates to trust instead of the system store (nil: the system's).
    public var caFile: String?
    public var policy = WebhookAddressPolicy()
    public var userAgent = "Herald-Webhooks/1"

    public init() {}
}

/// How one post ended.
public enum WebhookPostResult: Sendable, Equatable {
    /// The receiver answered; `retryAfter` from its `Retry-After` (seconds), if it sent one.
    case answered(status: Int, retryAfter: Double?)
    /// Every address the host resolved to is one the policy forbids; nothing was sent.
    case refusedAddress(String)
    /// No answer: DNS, connect, TLS (an untrusted certificate), a timeout.
    case failed(CurlError)

    /// A 2xx answer: the delivery is done.
    public var isSuccess: Bool {
        if case .answered(let s, _) = self { return (200..<300).contains(s) }
        return false
    }
}

/// Posts webhook deliveries with libcurl: HTTP/1.1 or HTTP/2 over TLS verified against the
/// system store (or `caFile`), no redirects, no proxies, only http and https, and the SSRF
/// guard on every address just before connecting (a name resolving to a private address is
/// refused there, not only when the webhook was created: DNS rebinding).
///
/// One libcurl handle, reused so connections to a receiver are kept alive. Not
/// thread-safe: one poster per delivering thread.
public final class WebhookPoster {
    private let handle: UnsafeMutableRawPointer
    private let config: WebhookPosterConfig
    private let context: PostContext
    private var errorBuffer = [CChar](repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)

    private static let globalInit: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK

    /// Throws `CurlError` when libcurl cannot be set up (no memory, an option it lacks).
    public init(config: WebhookPosterConfig = WebhookPosterConfig()) throws(CurlError) {
        guard Self.globalInit, let h = curl_easy_init() else {
            throw CurlError(code: Int(CURLE_FAILED_INIT.rawValue), message: "curl_easy_init failed")
        }
        handle = h
        self.config = config
        context = PostContext(policy: config.policy, maxBytes: config.maxResponseBytes)
        do {
            try setDefaults()
        } catch {
            curl_easy_cleanup(h)
            throw error
        }
    }

    deinit { curl_easy_cleanup(handle) }

    private func setDefaults() throws(CurlError) {
        let ctx = Unmanaged.passUnretained(context).toOpaque()
        try CurlError.check(herald_curl_setopt_long(handle, CURLOPT_NOSIGNAL, 1))
        try CurlError.check(herald_curl_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 0))
        try CurlError.check(herald_curl_setopt_pointer(handle, CURLOPT_PROTOCOLS_STR, "http,https"))
        try CurlError.check(herald_curl_setopt_pointer(handle, CURLOPT_PROXY, ""))  // no proxy from the environment
        try CurlError.check(herald_curl_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, Int(config.connectTimeout * 1000)))
        try CurlError.check(herald_curl_setopt_long(handle, CURLOPT_TIMEOUT_MS, Int(config.totalTimeout * 1000)))
        try CurlError.check(herald_curl_setopt_long(handle, CURLOPT_SSL_VERIFYPEER, 1))
        try CurlError.check(herald_curl_setopt_long(handle, CURLOPT_SSL_VERIFYHOST, 2))
        if let ca = config.caFile { try CurlError.check(herald_curl_setopt_pointer(handle, CURLOPT_CAINFO, ca)) }
        try CurlError.check(herald_curl_setopt_pointer(handle, CURLOPT_USERAGENT, config.userAgent))
        try errorBuffer.withUnsafeMutableBufferPointer { b throws(CurlError) in
            try CurlError.check(herald_curl_setopt_pointer(handle, CURLOPT_ERRORBUFFER, b.baseAddress))
        }
        try CurlError.check(herald_curl_setopt_write(handle, curlWrite))
        try CurlError.check(herald_curl_setopt_pointer(handle, CURLOPT_WRITEDATA, ctx))
        try CurlError.check(herald_curl_setopt_header(handle, curlHeader))
        try CurlError.check(herald_curl_setopt_pointer(handle, CURLOPT_HEADERDATA, ctx))
        try CurlError.check(herald_curl_setopt_opensocket(handle, curlOpenSocket))
        try CurlError.check(herald_curl_setopt_pointer(handle, CURLOPT_OPENSOCKETDATA, ctx))
    }

    /// POSTs `body` (JSON) to `url` with `headers` added. Blocks up to `totalTimeout`.
    public func post(url: String, body: [UInt8], headers: [(String, String)]) -> WebhookPostResult {
        context.reset()
        errorBuffer.withUnsafeMutableBufferPointer { $0[0] = 0 }
        var list: UnsafeMutablePointer<curl_slist>?
        defer { curl_slist_free_all(list) }
        // No "Expect: 100-continue" (libcurl waits a second for it on bodies over 1 KiB).
        for line in ["Content-Type: application/json", "Expect:"] + headers.map({ "\($0.0): \($0.1)" }) {
            guard let next = curl_slist_append(list, line) else {
                return .failed(CurlError(code: Int(CURLE_OUT_OF_MEMORY.rawValue), message: "curl_slist_append failed"))
            }
            list = next
        }
        do {
            try CurlError.check(herald_curl_setopt_pointer(handle, CURLOPT_URL, url))
            try CurlError.check(herald_curl_setopt_pointer(handle, CURLOPT_HTTPHEADER, list))
            try CurlError.check(herald_curl_setopt_offset(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count)))
            let rc = body.withUnsafeBytes { b -> CURLcode in
                // POSTFIELDS is not copied: it must stay valid through curl_easy_perform.
                _ = herald_curl_setopt_pointer(handle, CURLOPT_POSTFIELDS, b.baseAddress ?? UnsafeRawPointer(bitPattern: 1))
                return curl_easy_perform(handle)
            }
            _ = herald_curl_setopt_pointer(handle, CURLOPT_POSTFIELDS, nil)
            if rc != CURLE_OK, let refused = context.refused { return .refusedAddress(refused) }
            let detail = errorBuffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            try CurlError.check(rc, detail: detail)
            var status = 0
            try CurlError.check(herald_curl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status))
            return .answered(status: status, retryAfter: context.retryAfter)
        } catch {
            return .failed(error)
        }
    }
}

/// What the C callbacks of one post read and write (confined to the posting thread).
final class PostContext {
    let policy: WebhookAddressPolicy
    let maxBytes: Int
    var received = 0
    var retryAfter: Double?
    var refused: String?

    init(policy: WebhookAddressPolicy, maxBytes: Int) {
        self.policy = policy
        self.maxBytes = maxBytes
    }

    func reset() {
        received = 0
        retryAfter = nil
        refused = nil
    }
}
