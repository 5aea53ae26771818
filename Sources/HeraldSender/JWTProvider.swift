import Foundation
import HeraldCore
import HeraldCrypto

/// The provider-token credentials of one Apple developer account (reference §2).
public struct APNSCredentials: Sendable {
    public var keyID: String
    public var teamID: String
    /// The .p8 signing key. Never logged (its type prints nothing).
    public var key: P256PrivateKey

    public init(keyID: String, teamID: String, key: P256PrivateKey) {
        self.keyID = keyID
        self.teamID = teamID
        self.key = key
    }
}

/// One `authorization` value and when it was signed.
public struct BearerToken: Sendable, Equatable {
    /// `bearer <jwt>`.
    public let header: String
    public let issuedAt: Int64
    /// Increases with every re-signing.
    public let generation: Int
}

/// One cached JWT shared by every connection (reference §2.4, §8.2): re-signed when it is
/// `refreshAfter` old, or when APNs says it expired.
///
/// Why 30 minutes by default: Apple wants a token re-signed at least hourly and a
/// connection's token changed at most once per 20 minutes. A connection adopts the current
/// token when it opens and moves to a newer one only 20 minutes later (the pool enforces
/// that). With tokens at most 30 minutes old when adopted, a connection uses a token at
/// most 30 + 20 = 50 minutes old — ten minutes inside the hour.
public final class JWTProvider: Sendable {
    public let credentials: APNSCredentials
    public let clock: WallClock
    public let refreshAfter: Double
    private let state: Locked<BearerToken?>
    private let logger: Logger

    public init(credentials: APNSCredentials, clock: WallClock = SystemClock(), refreshAfter: Double = 30 * 60, logger: Logger) {
        precondition(refreshAfter >= 20 * 60 && refreshAfter <= 40 * 60, "re-sign between 20 and 40 minutes (see the type's doc)")
        self.credentials = credentials
        self.clock = clock
        self.refreshAfter = refreshAfter
        self.logger = logger
        state = Locked(nil)
    }

    /// The token to send now, signing a new one when the cached one is due. Any thread.
    /// Throws only if signing fails (a broken key).
    public func current() throws -> BearerToken {
        let now = clock.nowSeconds()
        if let t = state.withLock({ $0 }), Double(now - t.issuedAt) < refreshAfter { return t }
        return try sign(replacing: nil, now: now)
    }

    /// APNs answered `ExpiredProviderToken` for `generation`: re-sign unless another
    /// caller already did, or the token is younger than a minute (then the clock is wrong
    /// and re-signing would loop; the caller alerts instead). Returns whether it re-signed.
    @discardableResult
    public func expired(generation: Int) -> Bool {
        let now = clock.nowSeconds()
        guard let t = state.withLock({ $0 }), t.generation == generation, now - t.issuedAt >= 60 else { return false }
        return (try? sign(replacing: generation, now: now)) != nil
    }

    private func sign(replacing generation: Int?, now: Int64) throws -> BearerToken {
        try state.withLock { s in
            if let cur = s {
                // Someone else re-signed meanwhile.
                if let g = generation, cur.generation != g { return cur }
                if generation == nil && Double(now - cur.issuedAt) < refreshAfter { return cur }
            }
            let jwt = try APNSJWT.sign(
                keyID: credentials.keyID, teamID: credentials.teamID, issuedAt: now, key: credentials.key)
            let t = BearerToken(header: "bearer " + jwt, issuedAt: now, generation: (s?.generation ?? 0) + 1)
            s = t
            logger.info("apns.jwt_signed", ["kid": .string(credentials.keyID), "iat": .int(now), "generation": .int(Int64(t.generation))])
            return t
        }
    }
}
