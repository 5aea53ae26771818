import Foundation
import HeraldCore
import HeraldHTTPServer

/// A real HTTP receiver on 127.0.0.1 (Herald's own libmicrohttpd server): records every
/// post and answers with `answer(n)` for the n-th (0-based). Any thread.
public final class WebhookReceiver: Sendable {
    public struct Post: Sendable {
        public let signature: String?
        public let delivery: String?
        public let body: [UInt8]
        public var json: JSON { (try? JSON.parse(body)) ?? .null }
    }

    public let server: HTTPServer
    public let posts = Locked<[Post]>([])

    public init(answer: @escaping @Sendable (Int) -> Int = { _ in 200 }) throws {
        let posts = self.posts
        server = try HTTPServer(
            config: HTTPServerConfig(host: "127.0.0.1", port: 0, threads: 2, maxBodyBytes: 4 << 20, shutdownGraceSeconds: 1),
            logger: .discard,
            handler: HTTPHandlerFunction { req in
                let n = posts.withLock { p in
                    p.append(Post(signature: req.header("herald-signature"), delivery: req.header("herald-delivery"), body: req.body))
                    return p.count - 1
                }
                return .empty(answer(n))
            })
        try server.start()
    }

    deinit { server.stop() }

    public var url: String { "http://127.0.0.1:\(server.port)/hook" }

    /// Waits (at most `timeout` s) until `done` holds for the posts so far; returns them.
    public func wait(timeout: Double = 30, until done: ([Post]) -> Bool) -> [Post] {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while true {
            let p = posts.get()
            if done(p) || Date() > deadline { return p }
            usleep(20_000)
        }
    }
}
