/// Every reason string APNs documents (reference §6), plus `unknown` for anything else.
public enum APNSReason: Sendable, Hashable, CustomStringConvertible {
    case badCollapseId, badDeviceToken, badExpirationDate, badMessageId, badPriority, badTopic
    case deviceTokenNotForTopic, duplicateHeaders, idleTimeout, invalidPushType, missingDeviceToken
    case missingTopic, payloadEmpty, topicDisallowed, featureNotEnabled, missingChannelId, badChannelId
    case channelNotRegistered, badRequestParams, badRequestPayload, missingPushType, cannotCreateChannelConfig
    case badCertificate, badCertificateEnvironment, expiredProviderToken, invalidProviderToken
    case missingProviderToken, forbidden, unrelatedKeyIdInToken, topicMismatch, badPath, methodNotAllowed
    case unregistered, expiredToken, payloadTooLarge, tooManyRequests, tooManyProviderTokenUpdates
    case internalServerError, serviceUnavailable, shutdown
    /// Not an APNs reply: the connection was lost or the stream timed out.
    case connectionLost
    case unknown(String)

    static let table: [(String, APNSReason)] = [
        ("BadCollapseId", .badCollapseId), ("BadDeviceToken", .badDeviceToken),
        ("BadExpirationDate", .badExpirationDate), ("BadMessageId", .badMessageId), ("BadPriority", .badPriority),
        ("BadTopic", .badTopic), ("DeviceTokenNotForTopic", .deviceTokenNotForTopic),
        ("DuplicateHeaders", .duplicateHeaders), ("IdleTimeout", .idleTimeout), ("InvalidPushType", .invalidPushType),
        ("MissingDeviceToken", .missingDeviceToken), ("MissingTopic", .missingTopic), ("PayloadEmpty", .payloadEmpty),
        ("TopicDisallowed", .topicDisallowed), ("FeatureNotEnabled", .featureNotEnabled),
        ("MissingChannelId", .missingChannelId), ("BadChannelId", .badChannelId),
        ("ChannelNotRegistered", .channelNotRegistered), ("BadRequestParams", .badRequestParams),
        ("BadRequestPayload", .badRequestPayload), ("MissingPushType", .missingPushType),
        ("CannotCreateChannelConfig", .cannotCreateChannelConfig), ("BadCertificate", .badCertificate),
        ("BadCertificateEnvironment", .badCertificateEnvironment), ("ExpiredProviderToken", .expiredProviderToken),
        ("InvalidProviderToken", .invalidProviderToken), ("MissingProviderToken", .missingProviderToken),
        ("Forbidden", .forbidden), ("UnrelatedKeyIdInToken", .unrelatedKeyIdInToken), ("TopicMismatch", .topicMismatch),
        ("BadPath", .badPath), ("MethodNotAllowed", .methodNotAllowed), ("Unregistered", .unregistered),
        ("ExpiredToken", .expiredToken), ("PayloadTooLarge", .payloadTooLarge), ("TooManyRequests", .tooManyRequests),
        ("TooManyProviderTokenUpdates", .tooManyProviderTokenUpdates), ("InternalServerError", .internalServerError),
        ("ServiceUnavailable", .serviceUnavailable), ("Shutdown", .shutdown),
    ]

    private static let byName: [String: APNSReason] = Dictionary(uniqueKeysWithValues: table)

    /// Parses APNs' reason string. Both spellings of 503 are accepted (§9).
    public init(_ text: String) {
        if let r = Self.byName[text] {
            self = r
        } else if text == "Service Unavailable" {
            self = .serviceUnavailable
        } else if text == "ConnectionLost" {
            self = .connectionLost
        } else {
            self = .unknown(text)
        }
    }

    /// APNs' spelling.
    public var description: String {
        switch self {
        case .connectionLost: return "ConnectionLost"
        case .unknown(let s): return s
        default: return Self.table.first { $0.1 == self }!.0
        }
    }

    /// A label for metrics: the APNs name, or "Unknown" (label values must come from a
    /// closed set, style §11).
    public var metricLabel: String {
        if case .unknown = self { return "Unknown" }
        return description
    }
}
