import HeraldAPNS
import Testing

@testable import HeraldStore

/// Herald's channels against APNs' list: a value, no I/O.
@Suite struct ChannelReconciliationTests {
    func channel(
        _ num: Int64, _ id: String, apns: String?, open: Bool = true, bundle: String = "com.a", env: APNSEnvironment = .sandbox,
        createdAt: Int64 = 0
    ) -> Channel {
        Channel(
            num: num, id: id, bundleID: bundle, mode: apns == nil ? .fanout : .broadcast, environment: env, storagePolicy: .none,
            apnsChannelID: apns, isOpen: open, lifecycle: .idle, lastSeq: 0, lastTimestamp: 0, currentEvent: nil, catchUp: true,
            minIntervalMillis: 0, priority10BudgetPerHour: 0, createdAtMillis: createdAt, closedAtMillis: open ? nil : 1)
    }

    @Test func orphansAreUnknownOrClosedAndLostOnesAreOpenAndMissing() {
        let channels = [
            channel(1, "live", apns: "A"), channel(2, "gone", apns: "B"), channel(3, "closed", apns: "C", open: false),
            channel(4, "fan", apns: nil), channel(5, "prod", apns: "D", env: .production),
            channel(6, "other-app", apns: "E", bundle: "com.b"),
            channel(7, "lost-before", apns: "F"),
        ]
        let r = ChannelReconciliation.compare(
            bundleID: "com.a", environment: .sandbox, channels: channels, apnsIDs: ["A", "C", "X", "D", "E", "A"], markedLost: [7])
        #expect(r.apnsChannels == 5)
        // D and E are other environments' and apps' ids: at this app's list they are orphans too.
        #expect(
            r.orphans == [
                .init(apnsChannelID: "C", closedChannel: "closed"), .init(apnsChannelID: "D", closedChannel: nil),
                .init(apnsChannelID: "E", closedChannel: nil), .init(apnsChannelID: "X", closedChannel: nil),
            ])
        #expect(
            r.lost == [
                .init(channel: "gone", channelNum: 2, apnsChannelID: "B", isNew: true),
                .init(channel: "lost-before", channelNum: 7, apnsChannelID: "F", isNew: false),
            ])
        #expect(!r.nearLimit)
    }

    @Test func aChannelCreatedSinceTheListBeganIsNeverLost() {
        // Created at APNs after the list was answered, stored before Herald's channels
        // were read: its APNs id cannot be in the list.
        let channels = [channel(1, "old", apns: "A", createdAt: 1_000), channel(2, "new", apns: "B", createdAt: 5_000)]
        let r = ChannelReconciliation.compare(
            bundleID: "com.a", environment: .sandbox, channels: channels, apnsIDs: [], markedLost: [], listedAtMillis: 5_000)
        #expect(r.lost.map(\.channel) == ["old"])
        #expect(r.orphans.isEmpty)
    }

    @Test func nothingToDoWhenBothAgree() {
        let r = ChannelReconciliation.compare(
            bundleID: "com.a", environment: .sandbox, channels: [channel(1, "live", apns: "A")], apnsIDs: ["A"], markedLost: [])
        #expect(r.orphans.isEmpty && r.lost.isEmpty && r.apnsChannels == 1)
    }

    @Test func theWarningStartsAtNinetyPercentOfTenThousand() {
        #expect(ChannelReconciliation.channelLimit == 10_000)
        #expect(ChannelReconciliation.warningThreshold == 9_000)
        func at(_ n: Int) -> Bool {
            ChannelReconciliation(bundleID: "b", environment: .production, apnsChannels: n, orphans: [], lost: []).nearLimit
        }
        #expect(!at(8_999) && at(9_000) && at(10_000))
    }

    @Test func targetsAreEveryAppAndEnvironmentWithAChannelOnce() {
        let t = ChannelReconciliation.targets([
            channel(1, "a", apns: nil, bundle: "com.b"), channel(2, "b", apns: "x", bundle: "com.a"),
            channel(3, "c", apns: nil, open: false, bundle: "com.a", env: .production), channel(4, "d", apns: nil, bundle: "com.a"),
        ])
        #expect(t.map { "\($0.bundleID)/\($0.environment.rawValue)" } == ["com.a/production", "com.a/sandbox", "com.b/sandbox"])
    }
}
