import HeraldCore
import HeraldCrypto
import HeraldNet

/// How to run the simulator.
public struct SimulatorConfig: Sendable {
    /// The APNs endpoint (token, broadcast and channel management all on this address).
    public var listen = HostPort(host: "127.0.0.1", port: 2197)
    /// The control/ledger HTTP interface (nil: none).
    public var control: HostPort? = HostPort(host: "127.0.0.1", port: 2198)
    /// TLS certificate chain and key (PEM files).
    public var certificateFile: String
    public var privateKeyFile: String
    /// Provider-token identity the simulator accepts: Team ID, Key ID and the public half
    /// of the .p8 key (reference §2).
    public var teamID: String
    public var keyID: String
    public var publicKey: P256PublicKey
    /// More teams accepted (each with its own key and bundles). With any, a request for a
    /// bundle that is not its connection's team's is 403 `TopicMismatch`.
    public var otherTeams: [SimulatorTeam] = []
    /// SETTINGS_MAX_CONCURRENT_STREAMS once a connection has sent a valid JWT (APNs
    /// raises it to about 1000).
    public var maxConcurrentStreams: UInt32 = 1000
    /// The limit before that: APNs allows one stream until a valid JWT is seen (§1.3).
    public var streamsBeforeAuth: UInt32 = 1
    /// Event-loop threads.
    public var threads = 1
    public var faults = SimulatorFaults()
    /// Channels per bundle ID (APNs: 10,000 per app per environment).
    public var maxChannelsPerBundle = 10_000
    /// A JWT older than this is `ExpiredProviderToken` (1 h).
    public var jwtMaxAge: Double = 3600
    /// Changing a connection's JWT sooner than this is `TooManyProviderTokenUpdates` (20 min).
    public var jwtMinSwitchInterval: Double = 1200
    /// Keep the ledger (benchmarks of raw speed may turn it off).
    public var recordLedger = true
    public var clock: WallClock = SystemClock()

    public init(
        certificateFile: String, privateKeyFile: String, teamID: String, keyID: String, publicKey: P256PublicKey
    ) {
        self.certificateFile = certificateFile
        self.privateKeyFile = privateKeyFile
        self.teamID = teamID
        self.keyID = keyID
        self.publicKey = publicKey
    }
}
