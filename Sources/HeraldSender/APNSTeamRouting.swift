/// Which Apple developer team sends for which app. APNs binds a token-authenticated
/// connection to one team and that team's bundle IDs (reference §1.3, §2.1: "tokens of
/// different developer accounts never share a connection"), so every push and every
/// channel-management call goes out on a pool of the team that owns its bundle. A value:
/// no keys, no I/O; `APNSPools` and the API ask it.
public struct APNSTeamRouting: Sendable, Equatable {
    /// One team: its ids and the bundles it covers.
    public struct Team: Sendable, Equatable {
        public var teamID: String
        public var keyID: String
        /// The bundles this team sends for; nil: every bundle (the single-key configuration).
        public var bundleIDs: Set<String>?

        public init(teamID: String, keyID: String, bundleIDs: Set<String>?) {
            self.teamID = teamID
            self.keyID = keyID
            self.bundleIDs = bundleIDs
        }
    }

    /// The answer for one bundle.
    public enum Choice: Sendable, Equatable {
        /// The team (by Team ID) whose key and connections carry this bundle.
        case team(String)
        /// No team covers the bundle: nothing can be sent for it.
        case uncovered
    }

    public let teams: [Team]
    /// The teams file the teams came from, for messages (nil: the single-key variables).
    public let source: String?
    private let byBundle: [String: String]
    private let catchAll: String?

    /// `teams` as given; a bundle listed by two teams goes to the first (the teams file
    /// loader refuses such a file before it gets here).
    public init(teams: [Team], source: String?) {
        self.teams = teams
        self.source = source
        var map: [String: String] = [:]
        for t in teams { for b in t.bundleIDs ?? [] where map[b] == nil { map[b] = t.teamID } }
        byBundle = map
        catchAll = teams.first { $0.bundleIDs == nil }?.teamID
    }

    /// One team for every bundle: `HERALD_APNS_KEY_FILE`, `_KEY_ID`, `_TEAM_ID`.
    public static func single(teamID: String, keyID: String) -> APNSTeamRouting {
        APNSTeamRouting(teams: [Team(teamID: teamID, keyID: keyID, bundleIDs: nil)], source: nil)
    }

    /// The team that sends for `bundleID`.
    public func team(for bundleID: String) -> Choice {
        if let t = byBundle[bundleID] ?? catchAll { return .team(t) }
        return .uncovered
    }

    /// Every Team ID, in the order given: the closed set of the metrics' `team` label.
    public var teamIDs: [String] { teams.map(\.teamID) }

    /// Why a channel for `bundleID` cannot be created (for an uncovered bundle).
    public func uncoveredMessage(_ bundleID: String) -> String {
        "no Apple team in \(source ?? "the APNs configuration") covers bundle '\(bundleID)': add it to one team's bundle_ids there and restart herald"
    }
}
