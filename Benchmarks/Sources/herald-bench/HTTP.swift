import Foundation
import HeraldCore

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A small synchronous HTTP client for the drivers (URLSession, keep-alive).
final class Client: @unchecked Sendable {
    let session: URLSession
    let token: String?

    init(token: String?) {
        let c = URLSessionConfiguration.ephemeral
        c.httpMaximumConnectionsPerHost = 8
        c.timeoutIntervalForRequest = 60
        session = URLSession(configuration: c)
        self.token = token
    }

    final class Box: @unchecked Sendable {
        var data: Data?
        var status = 0
        var error: Error?
    }

    func call(_ method: String, _ url: URL, body: Data? = nil) -> (Int, Data) {
        var r = URLRequest(url: url)
        r.httpMethod = method
        if let token { r.setValue("Bearer " + token, forHTTPHeaderField: "Authorization") }
        if let body {
            r.setValue("application/json", forHTTPHeaderField: "Content-Type")
            r.httpBody = body
        }
        let box = Box()
        let done = DispatchSemaphore(value: 0)
        session.dataTask(with: r) { d, resp, e in
            box.data = d
            box.status = (resp as? HTTPURLResponse)?.statusCode ?? 0
            box.error = e
            done.signal()
        }.resume()
        done.wait()
        if let e = box.error { fail("\(method) \(url): \(e)") }
        return (box.status, box.data ?? Data())
    }
}

func percentile(_ sorted: [Double], _ p: Double) -> Double {
    guard !sorted.isEmpty else { return 0 }
    return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
}
