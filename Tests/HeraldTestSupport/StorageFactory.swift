import HeraldCore
import HeraldStore

/// How a fixture makes the storage its engine and API run on (nil in a fixture: the
/// SQLite `Store` it always has). The support target knows no PostgreSQL; the test
/// target that wants it passes a factory for `PostgresStore`.
public struct StorageFactory: Sendable {
    /// Shown in test names and messages (`sqlite`, `postgres`).
    public let name: String
    /// Makes the storage for a fixture whose files live in `dir`, on `clock`.
    public let make: @Sendable (_ dir: String, _ clock: WallClock) throws -> OpenedStorage

    public init(name: String, make: @escaping @Sendable (_ dir: String, _ clock: WallClock) throws -> OpenedStorage) {
        self.name = name
        self.make = make
    }
}

/// A storage and how to close it (`HeraldStorage` has no `close`).
public struct OpenedStorage: Sendable {
    public let storage: any HeraldStorage
    public let close: @Sendable () -> Void

    public init(storage: any HeraldStorage, close: @escaping @Sendable () -> Void) {
        self.storage = storage
        self.close = close
    }
}
