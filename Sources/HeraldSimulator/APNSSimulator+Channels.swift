import Foundation
import HeraldCore
import HeraldCrypto

/// Control of the simulator's channels and teams behind the client's back: orphans planted,
/// channels deleted, as happens at Apple (a channel made by another tool, one deleted in
/// the console) — what `herald channels reconcile` must find.
extension APNSSimulator {
    /// Creates `count` channels for `bundleID` directly (no request, no team check) and
    /// returns their ids. Nil when that would pass the per-bundle cap.
    public func plantChannels(bundleID: String, count: Int = 1, storagePolicy: Int = 0) -> [String]? {
        state.withLock { s -> [String]? in
            let existing = s.channels.values.filter { $0.bundleID == bundleID }.count
            guard existing + count <= config.maxChannelsPerBundle else { return nil }
            var ids: [String] = []
            for _ in 0..<count {
                let id = Data(SecureRandom.bytes(16)).base64EncodedString()
                s.channels[id] = SimChannel(bundleID: bundleID, storagePolicy: storagePolicy, createdAt: config.clock.now())
                ids.append(id)
            }
            return ids
        }
    }

    /// Deletes channel `id` directly; false if there is none.
    @discardableResult
    public func deleteChannel(_ id: String) -> Bool {
        state.withLock { s in s.channels.removeValue(forKey: id) != nil }
    }

    /// The channels of `bundleID` (ids, sorted).
    public func channels(bundleID: String) -> [String] {
        state.withLock { s in s.channels.filter { $0.value.bundleID == bundleID }.map(\.key).sorted() }
    }

    /// Connections and requests per team (counted when `otherTeams` is set).
    public func teamTraffic() -> SimulatorTeamTraffic { state.withLock { $0.teams } }
}
