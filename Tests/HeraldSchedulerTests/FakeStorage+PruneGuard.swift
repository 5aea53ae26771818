import HeraldCore

@testable import HeraldStore

/// The pruning guard's shared tally, as the test sets it in `SharedLease.others` (what the
/// other workers' checkpoints stored); a recorded trip shows in the next read, as on
/// PostgreSQL.
extension FakeStorage {
    func pruneGuardTally(eventID: String, excluding shards: ShardSet) throws -> PruneGuardTally? {
        try write { s in
            guard var l = s.shared else { return nil }
            l.guardReads += 1
            s.shared = l
            var t = l.others ?? PruneGuardTally(startedShards: Shards.count, shardCount: Shards.count)
            if l.trips.contains(eventID) { t.tripped = true }
            return t
        }
    }

    func recordPruneGuardTrip(eventID: String) throws -> Bool {
        try write { s in
            let first = s.shared?.trips.contains(eventID) != true && s.shared?.tripStoredFirstElsewhere != true
            s.shared?.trips.append(eventID)
            return first
        }
    }
}
