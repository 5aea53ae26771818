import Foundation
import PackagePlugin

/// Generates `Migrations.swift` from the package's `Migrations/*.sql` (SQLite, for
/// HeraldStore) or `Migrations/postgres/*.sql` (for HeraldPostgres), so the `herald`
/// binary carries its schemas and deploys as one file.
@main
struct EmbedMigrations: BuildToolPlugin {
    /// The folder of each target's migrations, under the package; others use `Migrations`.
    static let folders = ["HeraldPostgres": "Migrations/postgres"]

    func createBuildCommands(context: PluginContext, target: Target) async throws -> [Command] {
        let dir = context.package.directoryURL.appending(path: Self.folders[target.name] ?? "Migrations")
        let files = (try? FileManager.default.contentsOfDirectory(at: dir, includingPropertiesForKeys: nil)) ?? []
        let sql = files.filter { $0.pathExtension == "sql" }.sorted { $0.lastPathComponent < $1.lastPathComponent }
        let output = context.pluginWorkDirectoryURL.appending(path: "Migrations.swift")
        return [
            .buildCommand(
                displayName: "Embedding \(sql.count) migrations",
                executable: try context.tool(named: "EmbedMigrationsTool").url,
                arguments: [output.path()] + sql.map { $0.path() },
                inputFiles: sql,
                outputFiles: [output])
        ]
    }
}
