import Foundation
import HeraldCore
import HeraldCrypto

/// The `Herald-Signature` header of a webhook delivery (design, "Webhooks"):
/// `t=<unix s>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`.
///
/// A receiver checks it by recomputing the HMAC over the timestamp, a dot and the raw
/// body bytes, comparing in constant time, and refusing a `t` too far from its own clock
/// (replay). `verify` is that recipe, for tests and for receivers written in Swift.
public enum WebhookSignature {
    /// The header value for `body` sent at `timestamp` (unix seconds). Any thread.
    public static func header(secret: [UInt8], timestamp: Int64, body: [UInt8]) -> String {
        "t=\(timestamp),v1=\(Hex.encode(mac(secret: secret, timestamp: timestamp, body: body)))"
    }

    /// Whether `header` signs `body` under `secret` with a timestamp within `tolerance`
    /// seconds of `now`. Unknown `key=value` parts are ignored (a later `v2` can be added
    /// beside `v1`); every `v1` is tried. Any thread.
    public static func verify(header: String, secret: [UInt8], body: [UInt8], now: Int64, tolerance: Int64 = 300) -> Bool {
        var timestamp: Int64?
        var candidates: [[UInt8]] = []
        for part in header.split(separator: ",") {
            let kv = part.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard kv.count == 2 else { continue }
            switch kv[0] {
            case "t": timestamp = Int64(kv[1])
            case "v1": if let b = Hex.decode(kv[1]) { candidates.append(b) }
            default: continue
            }
        }
        guard let t = timestamp, abs(now - t) <= tolerance else { return false }
        let expected = mac(secret: secret, timestamp: t, body: body)
        return candidates.contains { constantTimeEquals($0, expected) }
    }

    static func mac(secret: [UInt8], timestamp: Int64, body: [UInt8]) -> [UInt8] {
        var message = Array("\(timestamp).".utf8)
        message.append(contentsOf: body)
        return Digest.hmacSHA256(key: secret, message: message)
    }
}
