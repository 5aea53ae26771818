import HeraldCore

/// APNs environments and their hosts (reference §1.1).
public enum APNSEnvironment: String, Sendable, CaseIterable, Codable {
    case sandbox, production

    /// Token pushes: `api(.sandbox).push.apple.com:443`.
    public var tokenHost: String { self == .sandbox ? "api.sandbox.push.apple.com" : "api.push.apple.com" }
    /// Broadcast pushes: the broadcast page's connection list and curl recipe use the token
    /// hosts; its frame samples say `api-broadcast…` (§1.1, [U]) — so this is only the
    /// default of a separate, configurable setting.
    public var broadcastHost: String { tokenHost }
    /// Channel management: `api-manage-broadcast(.sandbox).push.apple.com`, port 2195
    /// (sandbox) or 2196 (production).
    public var managementHost: String {
        self == .sandbox ? "api-manage-broadcast.sandbox.push.apple.com" : "api-manage-broadcast.push.apple.com"
    }
    public var managementPort: Int { self == .sandbox ? 2195 : 2196 }
}

/// Paths and header fields of the APNs requests Herald sends (reference §3–§5). Values
/// only: the sender turns them into HTTP/2 fields.
public enum APNSRequests {
    /// `apns-topic` suffix of Live Activity pushes (§3.1).
    public static let liveActivityTopicSuffix = ".push-type.liveactivity"

    /// `/3/device/<hex token>`.
    public static func tokenPath(_ hexToken: String) -> String { "/3/device/" + hexToken }

    /// `/3/device/<hex token>` of the raw `token`, written into `path` (emptied first; its
    /// room is kept, so a reused buffer allocates nothing).
    /// Written in place when `path` already has the length (a reused request's path: one
    /// uniqueness check, the prefix and the digits stored, no append).
    public static func writeTokenPath(_ token: [UInt8], into path: inout [UInt8]) {
        token.withUnsafeBufferPointer { writeTokenPath($0, into: &path) }
    }

    /// As above, from bytes lent in place (a token of a scan batch, `TokenRows`).
    public static func writeTokenPath(_ token: UnsafeBufferPointer<UInt8>, into path: inout [UInt8]) {
        let prefix: StaticString = "/3/device/"
        let n = prefix.utf8CodeUnitCount + 2 * token.count
        if path.count != n { path = [UInt8](repeating: 0, count: n) }
        path.withUnsafeMutableBufferPointer { p in
            let o = p.baseAddress!
            o.update(from: prefix.utf8Start, count: prefix.utf8CodeUnitCount)
            Hex.write(token, to: o + prefix.utf8CodeUnitCount)
        }
    }

    /// `/4/broadcasts/apps/<bundleID>` — the bare bundle ID, with the leading slash (§4.1, §9).
    public static func broadcastPath(bundleID: String) -> String { "/4/broadcasts/apps/" + bundleID }

    /// `/1/apps/<bundleID>/channels`.
    public static func channelsPath(bundleID: String) -> String { "/1/apps/\(bundleID)/channels" }

    /// `/1/apps/<bundleID>/all-channels`.
    public static func allChannelsPath(bundleID: String) -> String { "/1/apps/\(bundleID)/all-channels" }

    /// Fields every token push of one Live Activity event shares: push type, topic with the
    /// suffix, priority, and expiration when the publisher set one (§3.1).
    public static func tokenPushFields(bundleID: String, priority: Int, expiration: Int64?) -> [(String, String)] {
        var f: [(String, String)] = [
            ("apns-push-type", "liveactivity"),
            ("apns-topic", bundleID + liveActivityTopicSuffix),
            ("apns-priority", String(priority)),
        ]
        if let expiration { f.append(("apns-expiration", String(expiration))) }
        return f
    }

    /// Fields of a broadcast push: channel, push type, and the two required fields
    /// expiration and priority (§4.1). No `apns-topic`.
    public static func broadcastFields(channelID: String, priority: Int, expiration: Int64) -> [(String, String)] {
        [
            ("apns-channel-id", channelID),
            ("apns-push-type", "liveactivity"),
            ("apns-expiration", String(expiration)),
            ("apns-priority", String(priority)),
        ]
    }

    /// Body of a channel-create request: `{"message-storage-policy":0|1,"push-type":"LiveActivity"}`.
    public static func createChannelBody(storagePolicy: Int) -> [UInt8] {
        JSON.object(["message-storage-policy": .int(Int64(storagePolicy)), "push-type": "LiveActivity"]).encoded()
    }
}
