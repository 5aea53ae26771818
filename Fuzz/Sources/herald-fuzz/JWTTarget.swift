import HeraldCore
import HeraldCrypto

/// `ParsedJWT.parse`, which the APNs simulator runs on every new `authorization` header.
/// A parsed token has object header and claims, and signs exactly its first two segments
/// as sent.
enum JWTTarget {
    static func run(_ data: [UInt8]) {
        let token = String(decoding: data, as: UTF8.self)
        guard let jwt = ParsedJWT.parse(token) else { return }
        FuzzCheck.expect(jwt.header.objectValue != nil && jwt.claims.objectValue != nil, "header or claims not objects")
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        FuzzCheck.expect(parts.count == 3, "parsed with \(parts.count) segments")
        FuzzCheck.expect(jwt.signingInput == Array((parts[0] + "." + parts[1]).utf8), "signing input differs from the token")
        _ = (jwt.alg, jwt.kid, jwt.iss, jwt.iat)
    }
}
