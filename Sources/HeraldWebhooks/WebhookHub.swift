import Foundation
import HeraldCore
import HeraldCrypto
import HeraldFanout
import HeraldStore

/// The webhooks of one Herald process: creation (the signing secret sealed at rest), what
/// the fan-out and channel closes report (`FanoutObserver`, `channelClosed`), and the
/// dispatcher thread that writes those reports to the durable outbox and posts the
/// deliveries (`WebhookHub+Dispatch.swift`).
///
/// Finished events and pruned tokens are recorded by the storage in the fan-out's own
/// transactions (`WebhookReporting`), closes in theirs; the dispatcher turns
/// those reports into deliveries. What cannot be recorded so (a guard trip, a retried
/// finish, a failed write) only appends to a bounded in-memory queue
/// (`WebhookConfig.pendingLimit`), merging pruned tokens of one channel, and returns:
/// nothing here blocks the fan-out.
public final class WebhookHub: FanoutObserver, @unchecked Sendable {
    // @unchecked: `pending`, `pendingWeight`, `answers`, `stopping` are guarded by `cond`;
    // `jobs` by `jobCond`; the dispatcher's state is confined to its thread.
    public let config: WebhookConfig
    let store: any HeraldStorage
    let box: SecretBox
    let clock: WallClock
    let logger: Logger
    let metrics: WebhookMetrics
    let holder: String

    enum Pending {
        case finished(FinishRecord)
        case pruned(channelNum: Int64, tokens: [String], reason: String)
        case closed(channel: String, why: String)
        case guardTripped(channel: String, eventID: String, share: Double)

        var weight: Int {
            if case .pruned(_, let t, _) = self { return t.count }
            return 1
        }
    }

    struct Answer {
        let delivery: WebhookDelivery
        let result: WebhookPostResult
    }

    struct Job {
        let delivery: WebhookDelivery
        let url: String
        let body: [UInt8]
        let headers: [(String, String)]
    }

    let cond = NSCondition()
    var pending: [Pending] = []
    var pendingWeight = 0
    var answers: [Answer] = []
    var stopping = false
    let jobCond = NSCondition()
    var jobs: [Job] = []
    var threads: [Thread] = []
    let done = DispatchSemaphore(value: 0)
    var running = 0

    /// `box` seals and opens signing secrets. Call `start` to run the dispatcher.
    public init(
        store: any HeraldStorage, box: SecretBox, config: WebhookConfig = WebhookConfig(), clock: WallClock = SystemClock(),
        metrics: MetricsRegistry, logger: Logger
    ) {
        self.store = store
        self.box = box
        self.config = config
        self.clock = clock
        self.logger = logger.with(subsystem: "webhooks")
        self.metrics = WebhookMetrics(metrics)
        holder = "whd-" + SecureRandom.token(bytes: 12)
        metrics.sampledGauge(
            "herald_queue_depth", help: "Items waiting in a named internal queue.", labels: ["queue": "webhook_pending"]
        ) { [weak self] in Double(self?.pendingDepth ?? 0) }
    }

    var pendingDepth: Int {
        cond.lock()
        defer { cond.unlock() }
        return pendingWeight
    }

    // MARK: - the API's part

    /// Creates a webhook for an already checked URL, event types and channel patterns;
    /// returns it with its signing secret (`whsec_…`), which is stored only sealed. Throws
    /// `StoreError` or `CryptoError`. API worker threads.
    public func create(url: String, events: [String], channels: [String]) throws -> (Webhook, secret: String) {
        let secret = "whsec_" + SecureRandom.token(bytes: 32)
        let sealed = try box.seal(Array(secret.utf8))
        let w = try store.createWebhook(url: url, events: events, channels: channels, sealedSecret: sealed)
        wake()
        return (w, secret)
    }

    /// Every webhook, oldest first.
    public func list() throws -> [Webhook] { try store.webhooks() }

    /// Deletes a webhook and its waiting deliveries; nil when unknown.
    public func delete(id: String) throws -> Webhook? {
        let w = try store.deleteWebhook(id: id)
        wake()
        return w
    }

    /// The signing secret of `w` (for the dispatcher). Throws `CryptoError` when the key
    /// file is not the one it was sealed with.
    func secret(of w: Webhook) throws -> [UInt8] { try box.open(w.sealedSecret) }

    // MARK: - reports

    /// A channel closed (`why`: `deleted` by `DELETE`, `expired`): recorded in the database
    /// before this returns (a write of its own, right after the close's), or, when that
    /// write fails, kept in memory for the dispatcher. Threads that may block (API workers).
    /// The storage recorded reports in the transaction of their fact (a close): the
    /// dispatcher turns them into deliveries now rather than at its next poll.
    public func reportsRecorded() { wake() }

    public func channelClosed(channel: String, why: String) {
        let event = WebhookEvent.channelClosed(channel: channel, why: why)
        do {
            try store.recordWebhookReport(type: event.kind.rawValue, channel: channel, payload: event.storedPayload)
            wake()
        } catch {
            logger.warning("webhooks.report_failed", ["type": .string(event.kind.rawValue), "error": .string("\(error)")])
            add(.closed(channel: channel, why: why))
        }
    }

    /// Recorded by the storage with the finish: the dispatcher is woken; else kept in memory.
    public func eventFinished(_ record: FinishRecord, recorded: Bool) {
        recorded ? wake() : add(.finished(record))
    }

    /// Recorded by the storage with the prune (the tokens it deleted): the dispatcher is
    /// woken; else the request's tokens are kept in memory.
    public func subscriptionsPruned(_ request: PruneRequest, removed: Int, recorded: Bool) {
        if recorded { return wake() }
        add(.pruned(channelNum: request.channelNum, tokens: request.items.map { Hex.encode($0.token) }, reason: request.reason.rawValue))
    }

    public func pruneGuardTripped(eventID: String, channelID: String, share: Double) {
        add(.guardTripped(channel: channelID, eventID: eventID, share: share))
    }

    /// Appends `p` (pruned tokens join the last waiting report of the same channel and
    /// reason), or drops and counts it when the queue is full.
    func add(_ p: Pending) {
        cond.lock()
        defer { cond.unlock() }
        var p = p
        if case .pruned(let num, var tokens, let reason) = p {
            let room = max(0, config.pendingLimit - pendingWeight)
            if tokens.count > room {
                metrics.dropped("queue_full").inc(UInt64(tokens.count - room))
                tokens.removeLast(tokens.count - room)
            }
            guard !tokens.isEmpty else { return }
            pendingWeight += tokens.count
            if case .pruned(num, var held, reason) = pending.last {
                held += tokens
                pending[pending.count - 1] = .pruned(channelNum: num, tokens: held, reason: reason)
                cond.signal()
                return
            }
            p = .pruned(channelNum: num, tokens: tokens, reason: reason)
        } else {
            guard pendingWeight < config.pendingLimit else {
                metrics.dropped("queue_full").inc()
                return
            }
            pendingWeight += 1
        }
        pending.append(p)
        cond.signal()
    }

    func wake() {
        cond.lock()
        cond.signal()
        cond.unlock()
    }
}
