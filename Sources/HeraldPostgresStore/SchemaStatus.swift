/// How a PostgreSQL database's recorded migrations compare with the ones this binary
/// knows: what `herald serve` decides at start. On PostgreSQL `serve` does not migrate
/// (several workers of different versions may share the database during a rolling
/// upgrade, and a schema change is the operator's step: `herald migrate`); it starts only
/// on the schema it was built for.
public enum SchemaStatus: Equatable, Sendable {
    /// Every known migration is recorded and none newer.
    case current
    /// No Herald schema at all (a new, empty database).
    case empty
    /// Some known migrations are missing (`missing`, ascending).
    case behind(missing: [Int])
    /// The database records a migration newer than any this binary knows.
    case newer(database: Int, known: Int)

    /// Compares `applied` (the versions in `schema_migrations`; empty when the table does
    /// not exist) with `known` (the embedded migrations). A newer version wins over a
    /// missing one: an old binary must never run on a newer schema.
    public init(applied: [Int], known: [Int]) {
        let newestKnown = known.max() ?? 0
        if let newest = applied.max(), newest > newestKnown {
            self = .newer(database: newest, known: newestKnown)
        } else if applied.isEmpty {
            self = known.isEmpty ? .current : .empty
        } else {
            let missing = Set(known).subtracting(applied).sorted()
            self = missing.isEmpty ? .current : .behind(missing: missing)
        }
    }

    /// Why a worker will not start on this database, with what to do (nil: it may start).
    /// `target` is the redacted connection target.
    public func refusal(target: String) -> String? {
        switch self {
        case .current:
            return nil
        case .empty:
            return "the PostgreSQL database \(target) has no Herald schema: run `herald migrate --db <url>` once, then start the workers"
        case .behind(let missing):
            return "the PostgreSQL database \(target) lacks migrations \(missing.map(String.init).joined(separator: ", ")) "
                + "of this herald: run `herald migrate --db <url>` (with this herald), then start the workers"
        case .newer(let have, let known):
            return "the PostgreSQL database is at schema version \(have), newer than this herald knows (\(known)); run a newer herald"
        }
    }
}
