import Foundation

/// A fresh directory under the system temp dir, removed when released.
final class TemporaryDirectory {
    let path: String

    init() throws {
        path =
            FileManager.default.temporaryDirectory
            .appendingPathComponent("herald-sql-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    /// A path for `name` inside the directory.
    func file(_ name: String) -> String { path + "/" + name }
}
