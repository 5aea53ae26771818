import HeraldAPNS

/// Herald's channels against APNs' `all-channels` for one app and environment (reference
/// §5, §8.17): a value, computed without I/O; the API runs the list calls, the marking and
/// the deletions it names.
public struct ChannelReconciliation: Sendable, Equatable {
    /// A channel APNs has that no open Herald channel holds: it counts against the 10,000
    /// per app and environment forever unless deleted.
    public struct Orphan: Sendable, Equatable {
        public var apnsChannelID: String
        /// The closed Herald channel that held it (nil: Herald never knew it).
        public var closedChannel: String?
    }

    /// An open Herald channel whose APNs channel is gone.
    public struct Lost: Sendable, Equatable {
        public var channel: String
        public var channelNum: Int64
        public var apnsChannelID: String
        /// Not marked lost before this reconciliation.
        public var isNew: Bool
    }

    public var bundleID: String
    public var environment: APNSEnvironment
    /// How many channels APNs has for the app in the environment.
    public var apnsChannels: Int
    public var orphans: [Orphan]
    public var lost: [Lost]

    /// APNs allows this many channels per app and environment (reference §5).
    public static let channelLimit = 10_000
    /// Warn (log, alert) from this many: 90 % of the limit.
    public static let warningThreshold = channelLimit * 9 / 10

    /// Compares `apnsIDs` (APNs' list for `bundleID` in `environment`, asked for at
    /// `listedAtMillis`) with `channels` (Herald's, read after the list; those of other
    /// apps and environments are ignored). `markedLost`: the numbers of channels already
    /// marked lost. Orphans and lost ones come sorted by id.
    ///
    /// Why the order and the time: a channel is created at APNs first and stored second.
    /// Reading Herald's channels after the list means a channel whose APNs channel is in
    /// the list is (almost always) already stored, so it is not taken for an orphan; and a
    /// channel created since the list began may have an APNs channel the list could not
    /// show, so it is never taken for lost.
    public static func compare(
        bundleID: String, environment: APNSEnvironment, channels: [Channel], apnsIDs: [String], markedLost: Set<Int64>,
        listedAtMillis: Int64 = .max
    ) -> ChannelReconciliation {
        let mine = channels.filter { $0.bundleID == bundleID && $0.environment == environment && $0.apnsChannelID != nil }
        let atAPNs = Set(apnsIDs)
        var openByID: [String: Channel] = [:]
        var closedByID: [String: Channel] = [:]
        for c in mine {
            if c.isOpen { openByID[c.apnsChannelID!] = c } else { closedByID[c.apnsChannelID!] = c }
        }
        let orphans = atAPNs.subtracting(openByID.keys).sorted().map { Orphan(apnsChannelID: $0, closedChannel: closedByID[$0]?.id) }
        let lost = openByID.filter { !atAPNs.contains($0.key) && $0.value.createdAtMillis < listedAtMillis }.values.sorted {
            $0.id < $1.id
        }.map {
            Lost(channel: $0.id, channelNum: $0.num, apnsChannelID: $0.apnsChannelID!, isNew: !markedLost.contains($0.num))
        }
        return ChannelReconciliation(bundleID: bundleID, environment: environment, apnsChannels: atAPNs.count, orphans: orphans, lost: lost)
    }

    /// Every (app, environment) Herald has a channel for, open or closed, sorted: what a
    /// reconciliation lists at APNs.
    public static func targets(_ channels: [Channel]) -> [(bundleID: String, environment: APNSEnvironment)] {
        struct Key: Hashable, Comparable {
            let bundle: String
            let env: String
            static func < (a: Key, b: Key) -> Bool { (a.bundle, a.env) < (b.bundle, b.env) }
        }
        return Set(channels.map { Key(bundle: $0.bundleID, env: $0.environment.rawValue) }).sorted().map {
            ($0.bundle, APNSEnvironment(rawValue: $0.env)!)
        }
    }

    /// At or past 90 % of the limit.
    public var nearLimit: Bool { apnsChannels >= Self.warningThreshold }
}
