import HeraldAPNS
import HeraldCore
import HeraldStore

/// Tokens read together, sent together, and checkpointed together once all answered.
struct BatchState {
    /// Its index among the batches of this run.
    let ordinal: Int
    let tokens: TokenRows
    /// The last token of the batch and the pass phase it belongs to: the checkpoint once
    /// this batch and every earlier one are finished.
    let last: [UInt8]
    let wrapped: Bool
    let express: Bool
    var remaining: Int

    init(ordinal: Int, tokens: TokenRows, wrapped: Bool, express: Bool) {
        self.ordinal = ordinal
        self.tokens = tokens
        last = tokens.last ?? []
        self.wrapped = wrapped
        self.express = express
        remaining = tokens.count
    }
}

/// The scheduler's state for one event being sent.
///
/// The pass over the channel's tokens starts after `passStart`, runs to the end, wraps to
/// the beginning and ends at `passStart` (inclusive). A fresh event starts at the
/// beginning; an event that supersedes another starts where that one's checkpoint was, so
/// the subscribers it had not reached get the new state first and nobody waits a full
/// pass behind a stream of updates.
struct RunState {
    let id: RunID
    var record: EventRecord
    let channelNum: Int64
    let kind: SubscriptionKind
    let usesTokens: Bool
    let usesBroadcast: Bool
    var priority: Int
    /// The shards this run sends to (on SQLite every one; with shared leases the part of
    /// the channel's lease the event is still to reach).
    let shards: ShardSet

    var passStart: [UInt8]
    var scanCursor: [UInt8]
    var scanWrapped: Bool
    var scanDone: Bool
    var checkpointCursor: [UInt8]
    var checkpointWrapped: Bool
    var checkpointDirty = false
    var lastCheckpointWrite = 0.0
    /// Batches read so far; batches the in-memory checkpoint covers; those the last
    /// checkpoint write covers; those the last committed write covers (the duplicate
    /// window is `batchesRead - batchesCommitted`).
    var batchesRead = 0
    var batchesCheckpointed = 0
    var batchesWritten = 0
    var batchesCommitted = 0
    /// The last checkpoint (or `markSending`) write failed: the window cannot be kept, so
    /// sending is not held back by it until a checkpoint commits again.
    var checkpointFailing = false

    /// Submitted batches not yet all answered, oldest first.
    var inFlight: [BatchState] = []
    /// A batch the sender had no room for.
    var unsubmitted: BatchState?
    /// A scan is out (its rows come back through `batchScanned`).
    var scanning = false
    /// Scans failed in a row, and when the next may go (`FanoutConfig.scanRetry`).
    var scanFailures = 0
    var scanRetryAt = 0.0
    var outstanding = 0
    var counters: EventCounters
    var broadcastPending: Bool
    var started = false
    var startedAt = 0.0
    var firstPushAt: Double?
    var stopped = false
    var stopState: EventState?
    var stopReason: String?
    var supersededBy: String?
    /// Its channel was closed: its answers are taken, nothing is recorded.
    var orphaned = false
    /// Finishing: waiting for `pendingPrunes` before its final state is written.
    var finishing = false
    var pendingPrunes = 0
    /// The background count of its targets (asked for by its `start`) has not come back
    /// (`targetsCounted`, with a number or failed). A superseded run's `skipped` is its
    /// targets not reached, so it stays draining until the count is in: finished before,
    /// its targets would be what it had sent and `skipped` 0.
    var countPending = false

    // Pruning guard (its tally is `counters.answers` and `counters.invalid`).
    var guardTripped = false
    /// A shared lease's guard: the other shards' tally is being read (counted in
    /// `pendingPrunes`, so the run does not finish before the decision).
    var guardReading = false
    /// A shared lease's guard reads the others' tally again once this many invalid tokens
    /// are held (after a `hold`).
    var nextGuardCheck = FanoutScheduler.pruneBatch
    /// Tokens APNs called invalid (BadDeviceToken, DeviceTokenNotForTopic), held until the
    /// guard has seen enough answers.
    var heldInvalid: [(kind: SubscriptionKind, token: [UInt8], beforeMillis: Int64)] = []
    /// Tokens APNs unregistered (410, with its timestamp), pruned in batches.
    var unregistered: [(kind: SubscriptionKind, token: [UInt8], beforeMillis: Int64)] = []

    init(id: RunID, record: EventRecord, channel: Channel, shards: ShardSet) {
        self.id = id
        self.record = record
        self.shards = shards
        channelNum = record.channelNum
        kind = record.kind == .start ? .pushToStart : .activity
        usesTokens = channel.mode.usesTokens || record.kind == .start
        usesBroadcast =
            channel.mode.usesBroadcast && record.kind != .start && channel.apnsChannelID != nil
            && record.broadcastState == .pending && shards.contains(0)
        priority = record.priority
        counters = record.counters
        broadcastPending = usesBroadcast
        passStart = record.passStart ?? []
        scanCursor = record.cursor ?? passStart
        scanWrapped = record.wrapped
        checkpointCursor = scanCursor
        checkpointWrapped = scanWrapped
        scanDone = !usesTokens
    }

    /// True when every token part and the broadcast part are finished.
    var finished: Bool { scanDone && unsubmitted == nil && outstanding == 0 && !broadcastPending && !scanning }

    /// Nothing of it is in flight any more.
    var drained: Bool { outstanding == 0 && !broadcastPending }

    /// Pops finished batches off the front and moves the checkpoint past them.
    mutating func advanceCheckpoint() {
        var popped = 0
        while popped < inFlight.count && inFlight[popped].remaining == 0 {
            checkpointCursor = inFlight[popped].last
            checkpointWrapped = inFlight[popped].wrapped
            checkpointDirty = true
            batchesCheckpointed = inFlight[popped].ordinal + 1
            popped += 1
        }
        if popped > 0 { inFlight.removeFirst(popped) }
    }

    /// Targets not reached (for a superseded or stopped event).
    var unreached: Int64 {
        max(0, counters.targets - counters.sent - counters.failed - counters.pruned)
    }
}

/// The scheduler's state for one channel.
struct ChannelState {
    var channel: Channel
    /// The shards of the channel this process sends (on SQLite, every one).
    var lease: Lease
    /// When this worker stops sending under `lease` (the lease clock's seconds; nil: never).
    var leaseDeadline: Double?
    /// When the last grant or renewal was asked for (the lease clock), and one is under way.
    var leaseAskedAt = 0.0
    var renewing = false
    var refreshing = false
    /// Since when nothing is pending, running or draining (the lease clock; nil: busy).
    var idleSince: Double?
    /// Events accepted and not yet running, in sequence order.
    var pending: [EventRecord] = []
    /// The shards each pending event is still to reach, when not the whole lease (an event
    /// another worker sent part of).
    var pendingShards: [String: ShardSet] = [:]
    /// The highest sequence number taken into `pending`, or finished before this process
    /// took the channel (events at or below it are not taken again when their notification
    /// comes late).
    var acceptedSeq: Int64 = 0
    /// Late joiners' catch-up pushes handed to the sender and not answered yet: the next
    /// event waits for them.
    var catchUpsInFlight = 0
    var active: RunID?
    /// Superseded runs whose requests are still in flight; the active run waits for them so
    /// no token gets the older event after the newer one (design, delivery 4).
    var draining: [RunID] = []
    /// Runs of the active run's event on shards taken over while it was sending (a dead
    /// worker's, resumed from their checkpoints without waiting for the active run): the
    /// next event starts only once they are done.
    var helpers: [RunID] = []
    var lastUpdateStart = 0.0
    var priority10Sends: [Double] = []
    /// Where the next event's pass starts when it supersedes one that had started.
    var inheritedStart: [UInt8]?
    /// The stored current event a late joiner was last sent (its payload, not read again).
    var catchUpEvent: EventRecord?

    init(channel: Channel, lease: Lease, acceptedSeq: Int64) {
        self.channel = channel
        self.lease = lease
        self.acceptedSeq = acceptedSeq
    }
}
