/// A broadcast channel whose APNs channel is gone (deleted at Apple, or never known
/// there): found by reconciliation against APNs' `all-channels` (reference §5, §8.17).
/// Publishing to it is refused until it is closed and created again.
public struct APNSChannelLoss: Sendable, Equatable {
    public var channelNum: Int64
    /// The APNs channel id that was missing (a loss applies while the channel still has it).
    public var apnsChannelID: String
    public var lostAtMillis: Int64

    public init(channelNum: Int64, apnsChannelID: String, lostAtMillis: Int64) {
        self.channelNum = channelNum
        self.apnsChannelID = apnsChannelID
        self.lostAtMillis = lostAtMillis
    }
}

/// Channels found lost at APNs. Every method may block (a database round trip).
public protocol APNSChannelLosses: AnyObject, Sendable {
    /// Marks channel `channelNum` lost for `apnsChannelID` at `atMillis` (again: keeps the
    /// first time). Throws `channelNotFound` for an unknown channel.
    func markAPNSChannelLost(channelNum: Int64, apnsChannelID: String, atMillis: Int64) throws
    /// The loss of open channel `channelID` when it still has the APNs channel id that was
    /// lost (nil: not lost, or closed, or unknown).
    func apnsChannelLoss(channelID: String) throws -> APNSChannelLoss?
    /// Every loss that still applies (its channel open and still holding that APNs id).
    func apnsChannelLosses() throws -> [APNSChannelLoss]
}
