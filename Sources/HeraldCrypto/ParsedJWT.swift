import HeraldCore

/// A compact-serialized JWS taken apart (RFC 7515 §7.1), as the APNs simulator checks
/// provider tokens. Parsing checks the shape only; `verify(with:)` checks the signature.
public struct ParsedJWT: Sendable {
    /// The decoded protected header (a JSON object).
    public let header: JSON
    /// The decoded claims (a JSON object).
    public let claims: JSON
    /// The bytes that were signed: the first two segments as sent, joined by ".".
    public let signingInput: [UInt8]
    /// The decoded third segment (64 bytes R‖S for a genuine ES256 token).
    public let signature: [UInt8]

    /// The header's `alg`, when it is a string.
    public var alg: String? { header["alg"]?.stringValue }
    /// The header's `kid`, when it is a string.
    public var kid: String? { header["kid"]?.stringValue }
    /// The claims' `iss`, when it is a string.
    public var iss: String? { claims["iss"]?.stringValue }
    /// The claims' `iat`, only when it is a JSON integer (APNs wants whole seconds).
    public var iat: Int64? {
        if case .int(let value) = claims["iat"] { return value }
        return nil
    }

    /// Splits `token` into its three segments; nil unless there are exactly three, each is
    /// valid unpadded base64url, and the first two decode to JSON objects. Any thread.
    public static func parse(_ token: String) -> ParsedJWT? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3,
            let headerBytes = Base64URL.decode(parts[0]),
            let claimsBytes = Base64URL.decode(parts[1]),
            let signature = Base64URL.decode(parts[2]),
            let header = try? JSON.parse(headerBytes), header.objectValue != nil,
            let claims = try? JSON.parse(claimsBytes), claims.objectValue != nil
        else { return nil }
        let signingInput = Array(parts[0].utf8) + [UInt8(ascii: ".")] + Array(parts[1].utf8)
        return ParsedJWT(header: header, claims: claims, signingInput: signingInput, signature: signature)
    }

    /// True when `alg` is "ES256" and the signature over `signingInput` verifies with `key`.
    /// Checking `alg` first keeps a token that names another algorithm from being accepted
    /// on the strength of this key. Any thread.
    public func verify(with key: P256PublicKey) -> Bool {
        guard alg == "ES256" else { return false }
        return key.verifyES256(signature: signature, message: signingInput)
    }
}
