import HeraldStore

extension FanoutEngine {
    /// The storage that records webhook reports with the facts, when there is an observer
    /// and the storage can (SQLite's and PostgreSQL's stores; not the tests' fakes).
    var reports: (any WebhookReporting)? {
        observer.get() == nil ? nil : store as? any WebhookReporting
    }
}
