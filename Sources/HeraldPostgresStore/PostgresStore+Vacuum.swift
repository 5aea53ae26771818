import HeraldPostgres

/// Vacuuming `subscriptions` after a bulk registration, so that the next fan-out's scan is
/// an index-only scan (docs/performance.md §8, "The visibility map after a bulk import").
///
/// Why: the scan reads the key's index, which carries every column it returns (INCLUDE),
/// but PostgreSQL reads a row's table page too unless the visibility map marks that page
/// all-visible, and only VACUUM sets those bits. Rows just imported are on pages it has not
/// seen: a fan-out right after an import reads one table page per row (in token order, so a
/// different page each time, mostly outside shared buffers), measured at half of
/// PostgreSQL's CPU during a fan-out of 1M tokens. Autovacuum gets there, but only a minute
/// or more later (its nap time) and, for a table that already holds millions, only after
/// 20% of it is new. A VACUUM right after the batch commits costs little: it skips the pages
/// already all-visible and, with nothing deleted, the index. It can mark the batch's own
/// pages only once the batch's commit is on disk (with `synchronous_commit = off` not yet
/// when COMMIT returns, and a page whose rows' commit is not flushed stays unmarked), so such
/// a batch commits synchronously (`SET LOCAL synchronous_commit = on`).
extension PostgresStore {
    /// New rows of one registration batch from which it vacuums `subscriptions` once it has
    /// committed. A batch below this (a few registrations) leaves its pages to autovacuum:
    /// its table reads cost a fan-out little, and a VACUUM per small batch would cost more.
    static let vacuumAfterCreated = 10_000

    /// `VACUUM (SKIP_LOCKED) subscriptions` on a pooled connection (VACUUM cannot run in a
    /// transaction). Best effort: the batch has committed and is answered as such whatever
    /// happens here; a vacuum that is running already (another batch's, autovacuum's) is not
    /// waited for (SKIP_LOCKED), and a failure leaves the pages to autovacuum. On the
    /// calling thread, which it blocks for the VACUUM (about 10 ms per 50,000 new rows).
    func vacuumSubscriptions() {
        _ = try? read { c in try c.execute("VACUUM (SKIP_LOCKED) subscriptions") }
    }
}
