import HeraldCrypto

/// Another Apple developer team the simulator accepts besides its own (several teams in
/// one Herald): its ids, the public half of its key, and the bundles it owns. APNs binds a
/// connection to the team of its first JWT and refuses a bundle of another team there
/// (reference §1.3, §2.5 `TopicMismatch`); the simulator does the same.
public struct SimulatorTeam: Sendable {
    public var teamID: String
    public var keyID: String
    public var publicKey: P256PublicKey
    public var bundleIDs: Set<String>

    public init(teamID: String, keyID: String, publicKey: P256PublicKey, bundleIDs: Set<String>) {
        self.teamID = teamID
        self.keyID = keyID
        self.publicKey = publicKey
        self.bundleIDs = bundleIDs
    }
}

extension SimulatorConfig {
    /// The team and public key for a JWT's `kid` and `iss`: the simulator's own, or one of
    /// `otherTeams`.
    func signer(keyID: String, teamID: String) -> P256PublicKey? {
        if keyID == self.keyID && teamID == self.teamID { return publicKey }
        return otherTeams.first { $0.keyID == keyID && $0.teamID == teamID }?.publicKey
    }

    /// Whether team `teamID` may send for `bundle`: another team owns only its listed
    /// bundles; the simulator's own team owns every bundle no other team lists.
    func covers(teamID: String, bundle: String) -> Bool {
        if let t = otherTeams.first(where: { $0.teamID == teamID }) { return t.bundleIDs.contains(bundle) }
        return teamID == self.teamID && !otherTeams.contains { $0.bundleIDs.contains(bundle) }
    }
}

/// What went out on which team's connections: for tests that check no bundle ever rides
/// another team's connection.
public struct SimulatorTeamTraffic: Sendable, Equatable {
    /// Connections bound to each team (at their first valid JWT).
    public var connections: [String: Int] = [:]
    /// Requests per team and bundle, refused ones included.
    public var requests: [String: [String: Int]] = [:]
    /// Requests refused because the bundle is not the connection's team's.
    public var mismatches = 0
}
