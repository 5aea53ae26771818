import HeraldCore

extension Database {
    /// Publishes the writer's queue depth and counters in `registry`, sampled at scrape
    /// time: `herald_queue_depth{queue="db_write"}`, `herald_db_commits_total`,
    /// `herald_db_commits_failed_total`, `herald_db_write_jobs_total`,
    /// `herald_db_write_jobs_failed_total`.
    /// - Thread: any; once per database.
    public func registerMetrics(in registry: MetricsRegistry) {
        // The samplers hold the writer, not the database, so they don't keep it open.
        let writer = self.writer
        registry.sampledGauge(
            "herald_queue_depth", help: "Jobs waiting in a named queue.", labels: ["queue": "db_write"]
        ) { Double(writer.depth) }
        registry.sampledCounter("herald_db_commits_total", help: "Write transactions committed.") {
            Double(writer.commits.load(ordering: .relaxed))
        }
        registry.sampledCounter(
            "herald_db_commits_failed_total", help: "Write transactions that did not commit."
        ) { Double(writer.failedCommits.load(ordering: .relaxed)) }
        registry.sampledCounter("herald_db_write_jobs_total", help: "Write jobs run.") {
            Double(writer.jobs.load(ordering: .relaxed))
        }
        registry.sampledCounter("herald_db_write_jobs_failed_total", help: "Write jobs that ended in an error.") {
            Double(writer.failedJobs.load(ordering: .relaxed))
        }
    }
}
