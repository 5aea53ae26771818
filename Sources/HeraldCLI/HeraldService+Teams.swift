import HeraldCore
import HeraldCrypto
import HeraldSender

extension HeraldService {
    /// The Apple teams Herald sends as: those of `--apns-teams-file`, or the one of the
    /// single-key settings (covering every bundle), or nil without credentials. Each team
    /// gets its own JWT signer. Throws `CommandFailure` naming the file and the entry, or
    /// the key file (never the key).
    static func apnsTeams(_ s: ServeSettings, logger: Logger) throws -> (teams: [APNSTeam], source: String?)? {
        guard let path = s.apnsTeamsFile else {
            return try jwtProvider(s, logger: logger).map { ([APNSTeam(jwt: $0, bundleIDs: nil)], nil) }
        }
        let loaded: [(entry: APNSTeamEntry, credentials: APNSCredentials)]
        do {
            loaded = try APNSTeamsFile.load(path: path)
        } catch {
            throw CommandFailure("\(error)")
        }
        var teams: [APNSTeam] = []
        for (entry, credentials) in loaded {
            if entry.keyID.count != 10 || entry.teamID.count != 10 {
                logger.warning(
                    "herald.apns_ids_unusual", ["team": .string(entry.teamID), "hint": "Apple's Key ID and Team ID are 10 characters each"])
            }
            let jwt = JWTProvider(credentials: credentials, logger: logger.with(subsystem: "sender"))
            do {
                _ = try jwt.current()
            } catch {
                throw CommandFailure("teams file \(path), team \(entry.teamID): the key \(entry.keyFile) cannot sign: \(error)")
            }
            teams.append(APNSTeam(jwt: jwt, bundleIDs: Set(entry.bundleIDs)))
        }
        logger.info(
            "herald.apns_teams",
            [
                "file": .string(path),
                "teams": .array(
                    loaded.map { .object(["team": .string($0.entry.teamID), "bundles": .int(Int64($0.entry.bundleIDs.count))]) }),
            ])
        return (teams, path)
    }
}
