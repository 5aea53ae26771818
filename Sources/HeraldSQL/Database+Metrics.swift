import CSQLite
import HeraldCore

extension Database {
    /// Publishes the writer's queue depth and counters in `registry`, sampled at scrape
    /// time: `herald_queue_depth{queue="db_write"}`, `herald_db_commits_total`,
    /// `herald_db_commits_failed_total`, `herald_db_write_jobs_total`,
    /// `herald_db_write_jobs_failed_total`, and the heap SQLite holds in this process
    /// (`herald_db_memory_bytes`, `herald_db_memory_peak_bytes`: page caches, statements).
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
        // Process-wide figures: every database of the process (there is one in `serve`).
        registry.sampledGauge("herald_db_memory_bytes", help: "Heap held by SQLite now (page caches, statements), in bytes.") {
            Double(sqlite3_memory_used())
        }
        registry.sampledGauge("herald_db_memory_peak_bytes", help: "Most heap SQLite has held since the process started, in bytes.") {
            Double(sqlite3_memory_highwater(0))
        }
    }
}
