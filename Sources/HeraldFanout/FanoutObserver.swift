/// Hears what the fan-out did that others (the webhooks) report: every method only
/// records and returns at once (a bounded in-memory queue), never blocks and never throws.
public protocol FanoutObserver: AnyObject, Sendable {
    /// `record`'s final state is committed. `recorded`: the storage wrote the webhook report
    /// in that transaction (`WebhookReporting`); else the observer must keep it. Called on a
    /// storage thread (the write's completion) or the engine thread (a retried write).
    func eventFinished(_ record: FinishRecord, recorded: Bool)
    /// `request`'s subscriptions were deleted (`removed` of them; the rest were registered
    /// again after APNs' answer and kept); `recorded` as for `eventFinished`. Engine thread.
    func subscriptionsPruned(_ request: PruneRequest, removed: Int, recorded: Bool)
    /// The pruning guard stopped deletions for `eventID`: `share` of its answers called
    /// tokens invalid. Engine thread.
    func pruneGuardTripped(eventID: String, channelID: String, share: Double)
}
