import HeraldCore

/// A worker's identity as a lease owner: new on every start, so a restarted worker never
/// mistakes its predecessor's leases for its own.
public struct WorkerID: Sendable, Hashable, CustomStringConvertible {
    public let rawValue: String

    public init(_ rawValue: String) { self.rawValue = rawValue }

    /// A fresh random id (a version-4 UUID).
    public static func random() -> WorkerID {
        var g = SystemRandomNumberGenerator()
        return WorkerID(Identifiers.lowercaseUUID(using: &g))
    }

    public var description: String { rawValue }
}
