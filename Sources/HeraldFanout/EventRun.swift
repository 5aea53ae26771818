import HeraldAPNS
import HeraldCore
import HeraldSender
import HeraldStore

/// Tokens read together, sent together, and checkpointed together once all answered.
final class Batch {
    unowned let run: EventRun
    /// Its index among the batches of this run (since the run started or resumed).
    let ordinal: Int
    let tokens: [[UInt8]]
    let registeredAt: [Int64]
    /// The last token of the batch and the pass phase it belongs to: the checkpoint once
    /// this batch and every earlier one are finished.
    let last: [UInt8]
    let wrapped: Bool
    var remaining: Int
    var requests: [APNSRequest] = []

    init(run: EventRun, ordinal: Int, tokens: [[UInt8]], registeredAt: [Int64], wrapped: Bool) {
        self.run = run
        self.ordinal = ordinal
        self.tokens = tokens
        self.registeredAt = registeredAt
        last = tokens.last ?? []
        self.wrapped = wrapped
        remaining = tokens.count
    }
}

/// The scheduler's state for one event being sent. Confined to the scheduler thread.
///
/// The pass over the channel's tokens starts after `passStart`, runs to the end, wraps to
/// the beginning and ends at `passStart` (inclusive). A fresh event starts at the
/// beginning; an event that supersedes another starts where that one's checkpoint was, so
/// the subscribers it had not reached get the new state first and nobody waits a full
/// pass behind a stream of updates.
final class EventRun {
    var record: EventRecord
    let kind: SubscriptionKind
    let usesTokens: Bool
    let usesBroadcast: Bool
    var template: APNSTemplate?
    var priority: Int

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

    var inFlight = RingBuffer<Batch>(capacity: 32)
    var unsubmitted: Batch?
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

    // Pruning guard.
    var answers = 0
    var deadAnswers = 0
    var guardTripped = false
    /// Tokens APNs called invalid (BadDeviceToken, DeviceTokenNotForTopic), held until the
    /// guard has seen enough answers.
    var heldInvalid: [(kind: SubscriptionKind, token: [UInt8], beforeMillis: Int64)] = []
    /// Tokens APNs unregistered (410, with its timestamp), pruned in batches.
    var unregistered: [(kind: SubscriptionKind, token: [UInt8], beforeMillis: Int64)] = []

    init(record: EventRecord, channel: Channel) {
        self.record = record
        kind = record.kind == .start ? .pushToStart : .activity
        usesTokens = channel.mode.usesTokens || record.kind == .start
        usesBroadcast = channel.mode.usesBroadcast && record.kind != .start && channel.apnsChannelID != nil
            && record.broadcastState == .pending
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

    /// Superseding: this event starts where `older` had finished everything.
    func startAfter(_ older: EventRun) {
        passStart = older.checkpointCursor
        scanCursor = passStart
        scanWrapped = false
        checkpointCursor = passStart
        checkpointWrapped = false
    }

    /// True when every token part and the broadcast part are finished.
    var finished: Bool { scanDone && unsubmitted == nil && outstanding == 0 && !broadcastPending }

    /// Pops finished batches off the front and moves the checkpoint past them.
    func advanceCheckpoint() {
        while let b = inFlight.first, b.remaining == 0 {
            inFlight.popFirst()
            checkpointCursor = b.last
            checkpointWrapped = b.wrapped
            checkpointDirty = true
            batchesCheckpointed = b.ordinal + 1
        }
    }

    /// Targets not reached (for a superseded or stopped event).
    var unreached: Int64 {
        max(0, counters.targets - counters.sent - counters.failed - counters.pruned)
    }
}

/// The scheduler's state for one channel. Confined to the scheduler thread.
final class ChannelRun {
    var channel: Channel
    /// The shards of the channel this process sends (on SQLite, every one).
    let lease: Lease
    /// Events accepted and not yet running, in sequence order.
    var pending: [EventRecord] = []
    /// The highest sequence number taken into `pending`, or finished before this process
    /// took the channel (events at or below it are not taken again when their notification
    /// comes late).
    var acceptedSeq: Int64 = 0
    /// Late joiners' catch-up pushes handed to the sender and not answered yet: the next
    /// event waits for them.
    var catchUpsInFlight = 0
    var active: EventRun?
    /// Superseded runs whose requests are still in flight; the active run waits for them so
    /// no token gets the older event after the newer one (design, delivery 4).
    var draining: [EventRun] = []
    var lastUpdateStart = 0.0
    var priority10Sends: [Double] = []
    /// Where the next event's pass starts when it supersedes one that had started.
    var inheritedStart: [UInt8]?
    /// Late-joiner templates by event id.
    var catchUpTemplate: (eventID: String, template: APNSTemplate)?

    init(channel: Channel, lease: Lease) {
        self.channel = channel
        self.lease = lease
    }
}
