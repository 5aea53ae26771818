import Foundation
import HeraldCore

/// What to do with one APNs answer (reference §6 and §8) — a value, not an exception.
public enum PushOutcome: Sendable, Equatable {
    /// 200: delivered to APNs.
    case delivered(apnsID: String?, uniqueID: String?)
    /// The token is dead: 410 (with APNs' `timestamp`, ms, when given) or BadDeviceToken /
    /// DeviceTokenNotForTopic. The registry removes it unless it was registered later.
    case dropToken(reason: APNSReason, since: Int64?)
    /// Try again later: 429/500/503, IdleTimeout, connection loss. `after` is APNs'
    /// `Retry-After` in seconds when it sent one.
    case retry(reason: APNSReason, status: Int, after: Double?)
    /// 403 ExpiredProviderToken: re-sign the JWT and retry once.
    case refreshToken
    /// This event cannot be sent as it is (a bad request): fail it with the reason.
    case failEvent(reason: APNSReason, status: Int)
    /// The configuration is wrong (key, topic, capability, host): alert, don't retry.
    case failConfig(reason: APNSReason, status: Int)
    /// Broadcast: the APNs channel no longer exists.
    case channelGone

    /// Short label for metrics.
    public var label: String {
        switch self {
        case .delivered: "delivered"
        case .dropToken: "dropped"
        case .retry: "retry"
        case .refreshToken: "refresh_token"
        case .failEvent: "failed_event"
        case .failConfig: "failed_config"
        case .channelGone: "channel_gone"
        }
    }

    /// Classifies an APNs response: status, JSON body (`{"reason":…,"timestamp":…}`) and
    /// the `apns-id`, `apns-unique-id` and `retry-after` headers.
    public static func classify(
        status: Int, body: [UInt8], apnsID: String? = nil, uniqueID: String? = nil, retryAfter: String? = nil
    ) -> PushOutcome {
        if status == 200 || status == 201 || status == 204 { return .delivered(apnsID: apnsID, uniqueID: uniqueID) }
        var reason = APNSReason.unknown("")
        var timestamp: Int64?
        if let json = try? JSON.parse(body) {
            if let r = json["reason"]?.stringValue { reason = APNSReason(r) }
            timestamp = json["timestamp"]?.intValue
        }
        // Delay-seconds (RFC 9110 §10.2.3). A value that cannot be one ("-7", "nan", "inf")
        // is ignored, as if absent, rather than carried into the retry as a delay.
        let after = retryAfter.flatMap { Double($0.trimmingCharacters(in: .whitespaces)) }.flatMap {
            $0.isFinite && $0 >= 0 ? $0 : nil
        }
        switch (status, reason) {
        case (410, _):
            return .dropToken(reason: reason == .unknown("") ? .unregistered : reason, since: timestamp)
        case (400, .badDeviceToken), (400, .deviceTokenNotForTopic):
            return .dropToken(reason: reason, since: nil)
        case (400, .idleTimeout):
            return .retry(reason: reason, status: status, after: after)
        case (400, .channelNotRegistered):
            return .channelGone
        case (400, .topicDisallowed), (400, .featureNotEnabled), (400, .badChannelId), (400, .cannotCreateChannelConfig):
            return .failConfig(reason: reason, status: status)
        case (403, .expiredProviderToken):
            return .refreshToken
        case (403, .unrelatedKeyIdInToken):
            return .retry(reason: reason, status: status, after: nil)
        case (403, _), (404, _), (405, _):
            return .failConfig(reason: reason, status: status)
        case (429, _):
            return .retry(reason: reason, status: status, after: after)
        case (500..., _):
            return .retry(reason: reason, status: status, after: after)
        default:
            // Other 4xx (400 bad request, 413 too large, unknown): no retry (§8.20).
            return .failEvent(reason: reason, status: status)
        }
    }
}
