import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
import HeraldCore
#endif

/// What came back from one HTTP request.
struct HTTPReply: Sendable {
    var status: Int
    /// Header names lower-cased.
    var headers: [String: String]
    var body: Data
}

/// Why a request got no HTTP answer at all.
struct TransportFailure: Error, Sendable {
    /// True when the deadline passed (as opposed to a refused or broken connection).
    var timedOut: Bool
    var detail: String
}

/// The one place the CLI does HTTP: Foundation's `URLSession` (libcurl underneath), made
/// synchronous with a semaphore because every verb is a straight line of requests.
/// Owns its session and invalidates it when released. Any thread except the session's
/// delegate queue.
final class HTTPExchange: Sendable {
    private let session: URLSession
    let timeout: Double

    init(timeout: Double) {
        let c = URLSessionConfiguration.ephemeral
        c.timeoutIntervalForRequest = timeout
        c.timeoutIntervalForResource = timeout
        c.requestCachePolicy = .reloadIgnoringLocalCacheData
        session = URLSession(configuration: c)
        self.timeout = timeout
    }

    deinit { session.finishTasksAndInvalidate() }

    /// Sends `request` and waits for the whole answer. Throws `TransportFailure` when no
    /// HTTP answer arrived (refused, reset, name not found, timed out).
    func perform(_ request: URLRequest) throws(TransportFailure) -> HTTPReply {
        var request = request
        request.timeoutInterval = timeout
        let done = DispatchSemaphore(value: 0)
        let outcome = Locked<Result<HTTPReply, TransportFailure>?>(nil)
        let task = session.dataTask(with: request) { data, response, error in
            let result: Result<HTTPReply, TransportFailure>
            if let http = response as? HTTPURLResponse, error == nil {
                var headers: [String: String] = [:]
                for (k, v) in http.allHeaderFields {
                    if let k = k as? String, let v = v as? String { headers[k.lowercased()] = v }
                }
                result = .success(HTTPReply(status: http.statusCode, headers: headers, body: data ?? Data()))
            } else {
                let timedOut = (error as? URLError)?.code == .timedOut
                result = .failure(TransportFailure(timedOut: timedOut, detail: Self.describe(error)))
            }
            outcome.set(result)
            done.signal()
        }
        task.resume()
        done.wait()
        // The callback stored a result before signalling.
        return try outcome.get()!.get()
    }

    private static func describe(_ error: (any Error)?) -> String {
        guard let error else { return "no HTTP response" }
        if let u = error as? URLError {
            switch u.code {
            case .cannotConnectToHost: return "connection refused"
            case .cannotFindHost, .dnsLookupFailed: return "host not found"
            case .timedOut: return "timed out"
            case .networkConnectionLost: return "connection lost"
            case .secureConnectionFailed, .serverCertificateUntrusted, .serverCertificateHasBadDate,
                .serverCertificateNotYetValid, .serverCertificateHasUnknownRoot:
                return "TLS failure: \(u.localizedDescription)"
            default: return u.localizedDescription
            }
        }
        return error.localizedDescription
    }
}
