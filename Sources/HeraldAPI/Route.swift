import Foundation
import HeraldHTTPServer

/// The routes of the contract. `label` is the metrics label (closed set, no ids).
package enum Route: Equatable {
    case healthz, readyz, metrics
    case channels
    case reconcile
    case channel(String)
    case keys
    case key(String)
    case subscription(channel: String, token: String)
    case subscriptionsBatch(channel: String)
    case events(channel: String)
    case event(channel: String, id: String)

    package var label: String {
        switch self {
        case .healthz: "/healthz"
        case .readyz: "/readyz"
        case .metrics: "/metrics"
        case .channels: "/v1/channels"
        case .reconcile: "/v1/channels:reconcile"
        case .channel: "/v1/channels/{id}"
        case .keys: "/v1/keys"
        case .key: "/v1/keys/{id}"
        case .subscription: "/v1/channels/{id}/subscriptions/{token}"
        case .subscriptionsBatch: "/v1/channels/{id}/subscriptions:batch"
        case .events: "/v1/channels/{id}/events"
        case .event: "/v1/channels/{id}/events/{event_id}"
        }
    }

    /// Methods each route answers (405 with `Allow` for the rest).
    package var methods: [String] {
        switch self {
        case .healthz, .readyz, .metrics: ["GET", "HEAD"]
        case .channels, .keys: ["GET", "POST"]
        case .channel: ["GET", "DELETE"]
        case .key: ["DELETE"]
        case .subscription: ["PUT", "DELETE"]
        case .subscriptionsBatch, .events, .reconcile: ["POST"]
        case .event: ["GET"]
        }
    }

    /// Matches the raw (undecoded) path segment by segment, so an encoded `/` inside an id
    /// can never be taken for a separator.
    package init?(rawPath: String) {
        var p = rawPath
        if p.count > 1 && p.hasSuffix("/") { p.removeLast() }
        let raw = p.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        var s: [String] = []
        for r in raw {
            guard let d = String(r).removingPercentEncoding else { return nil }
            s.append(d)
        }
        switch s.count {
        case 1 where s[0] == "healthz": self = .healthz
        case 1 where s[0] == "readyz": self = .readyz
        case 1 where s[0] == "metrics": self = .metrics
        case 2 where s[0] == "v1" && s[1] == "channels": self = .channels
        case 2 where s[0] == "v1" && s[1] == "channels:reconcile": self = .reconcile
        case 2 where s[0] == "v1" && s[1] == "keys": self = .keys
        case 3 where s[0] == "v1" && s[1] == "channels": self = .channel(s[2])
        case 3 where s[0] == "v1" && s[1] == "keys": self = .key(s[2])
        case 4 where s[0] == "v1" && s[1] == "channels" && s[3] == "subscriptions:batch": self = .subscriptionsBatch(channel: s[2])
        case 4 where s[0] == "v1" && s[1] == "channels" && s[3] == "events": self = .events(channel: s[2])
        case 5 where s[0] == "v1" && s[1] == "channels" && s[3] == "subscriptions": self = .subscription(channel: s[2], token: s[4])
        case 5 where s[0] == "v1" && s[1] == "channels" && s[3] == "events": self = .event(channel: s[2], id: s[4])
        default: return nil
        }
    }
}
