import Foundation
import Glibc

/// A webhook's URL, checked when the webhook is created: `https://`, or `http://` to a
/// loopback address (design, "Webhooks"); no user name or password in it, no fragment; a
/// literal IP address must be one the policy permits. A host name is checked again at
/// every connection, address by address (`WebhookPoster`).
public struct WebhookTarget: Sendable, Equatable {
    public let url: String
    public let isHTTPS: Bool
    public let host: String

    /// Why a URL is refused; `message` is a sentence for the API's 422.
    public struct Refusal: Error, Sendable, Equatable {
        public enum Reason: Sendable, Equatable {
            case malformed, scheme, credentials, plainHTTP, address
        }
        public let reason: Reason
        public let message: String
    }

    /// Checks `url` against the rules above. Throws `Refusal`. Any thread.
    public init(_ url: String, policy: WebhookAddressPolicy) throws(Refusal) {
        guard url.utf8.count <= 2048, let c = URLComponents(string: url), let scheme = c.scheme?.lowercased(),
            let host = c.host, !host.isEmpty
        else {
            throw Refusal(reason: .malformed, message: "'url' must be an absolute URL with a host, at most 2048 bytes")
        }
        guard scheme == "https" || scheme == "http" else {
            throw Refusal(reason: .scheme, message: "'url' must be https:// (or http:// to a loopback address)")
        }
        guard c.user == nil && c.password == nil else {
            throw Refusal(reason: .credentials, message: "'url' must not carry a user name or password; the signature authenticates Herald")
        }
        guard c.fragment == nil else { throw Refusal(reason: .malformed, message: "'url' must not have a #fragment") }
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        let literal = Self.literalClass(bare)
        if scheme == "http" {
            let isLoopbackName = bare.lowercased() == "localhost"
            guard literal == .loopback || isLoopbackName, policy.allowLoopback else {
                throw Refusal(
                    reason: .plainHTTP, message: "'url' must be https://; http:// only to a loopback address (127.0.0.1, ::1, localhost)")
            }
        }
        if let literal, !policy.permits(literal) {
            throw Refusal(
                reason: .address,
                message: "'url' points at a \(Self.describe(literal)) address, which webhooks may not reach"
                    + (literal == .privateNetwork ? " unless the server allows private networks (HERALD_WEBHOOKS_ALLOW_PRIVATE)" : ""))
        }
        self.url = url
        isHTTPS = scheme == "https"
        self.host = bare
    }

    /// The class of `host` when it is an IP literal, else nil.
    static func literalClass(_ host: String) -> AddressClass? {
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 { return AddressClass(bytes: withUnsafeBytes(of: &v4) { Array($0) }) }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, host, &v6) == 1 { return AddressClass(bytes: withUnsafeBytes(of: &v6) { Array($0) }) }
        return nil
    }

    static func describe(_ c: AddressClass) -> String {
        switch c {
        case .loopback: "loopback"
        case .privateNetwork: "private-network"
        case .global: "public"
        case .unusable: "non-routable"
        }
    }
}
