import Foundation
import HeraldAPI

/// `Route(rawPath:)`: the raw request path is matched segment by segment and each segment
/// percent-decoded. A matched route, written back with every id fully percent-encoded, must
/// match the same route with the same ids (an encoded `/` or `%` inside an id never turns
/// into structure). Ids that are empty are left out of the round trip: "/v1/channels/" is the
/// collection, not the channel "".
enum RouteTarget {
    static func run(_ data: [UInt8]) {
        let path = String(decoding: data, as: UTF8.self)
        guard let route = Route(rawPath: path) else { return }
        FuzzCheck.expect(!route.methods.isEmpty && route.label.hasPrefix("/"), "route without methods or label")
        guard let raw = rawPath(route) else { return }
        FuzzCheck.expect(
            Route(rawPath: raw) == route, "\(route) written as \(raw) reads back as \(String(describing: Route(rawPath: raw)))")
    }

    static func rawPath(_ r: Route) -> String? {
        func seg(_ s: String) -> String? {
            if s.isEmpty { return nil }
            return s.utf8.map { b -> String in
                let c = Character(Unicode.Scalar(b))
                return (b < 0x80 && (c.isLetter || c.isNumber)) ? String(c) : String(format: "%%%02X", b)
            }.joined()
        }
        switch r {
        case .healthz: return "/healthz"
        case .readyz: return "/readyz"
        case .metrics: return "/metrics"
        case .channels: return "/v1/channels"
        case .reconcile: return "/v1/channels:reconcile"
        case .keys: return "/v1/keys"
        case .channel(let id): return seg(id).map { "/v1/channels/\($0)" }
        case .key(let id): return seg(id).map { "/v1/keys/\($0)" }
        case .subscriptionsBatch(let c): return seg(c).map { "/v1/channels/\($0)/subscriptions:batch" }
        case .events(let c): return seg(c).map { "/v1/channels/\($0)/events" }
        case .subscription(let c, let t):
            guard let c = seg(c), let t = seg(t) else { return nil }
            return "/v1/channels/\(c)/subscriptions/\(t)"
        case .event(let c, let e):
            guard let c = seg(c), let e = seg(e) else { return nil }
            return "/v1/channels/\(c)/events/\(e)"
        }
    }
}
