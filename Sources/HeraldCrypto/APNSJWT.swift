import HeraldCore

/// APNs provider authentication tokens: a JWS signed with ES256 by the team's .p8 key.
public enum APNSJWT {
    /// The token APNs expects in `authorization: bearer <token>`: header
    /// `{"alg":"ES256","kid":"<keyID>"}`, claims `{"iss":"<teamID>","iat":<issuedAt>}` (whole
    /// seconds since 1970), each base64url without padding, joined by ".", followed by "."
    /// and the base64url of the 64-byte R‖S signature of the first two parts. APNs refuses
    /// a token older than an hour and throttles one refreshed more often than every 20
    /// minutes: the caller picks `issuedAt` and caches the result. Any thread.
    /// - Throws: `OpenSSLError` when signing fails.
    public static func sign(keyID: String, teamID: String, issuedAt: Int64, key: P256PrivateKey) throws -> String {
        // Built as text, not through an encoder, so the bytes are exactly Apple's shape
        // (field order included); JSON.string(...).text only escapes the two values.
        let header = #"{"alg":"ES256","kid":"# + JSON.string(keyID).text + "}"
        let claims = #"{"iss":"# + JSON.string(teamID).text + #","iat":"# + String(issuedAt) + "}"
        let signingInput = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(claims.utf8))
        let signature = try key.signES256(Array(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature)
    }
}
