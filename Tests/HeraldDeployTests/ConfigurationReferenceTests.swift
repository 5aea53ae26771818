import Foundation
import HeraldCore
import Testing

@testable import HeraldCLI

/// The configuration reference in docs/operations.md and the settings the deploy files
/// pass must match `ServeSettings.options`, the one table `herald serve` reads.
@Suite struct ConfigurationReferenceTests {
    /// One row of the reference table: flag, variable, default ("—" for none).
    struct Row: Equatable, CustomStringConvertible {
        var flag, env, defaultValue: String
        var description: String { "| `\(flag)` | `\(env)` | \(defaultValue) |" }
    }

    static func expectedRows() -> [Row] {
        ServeSettings.options.map { Row(flag: $0.flag, env: $0.env, defaultValue: $0.defaultValue.map { "`\($0)`" } ?? "—") }
    }

    /// Rows of the markdown table whose first cell is a `--flag`.
    static func documentedRows(_ markdown: String) -> [Row] {
        markdown.split(separator: "\n").compactMap { line in
            guard line.hasPrefix("| `--") else { return nil }
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            guard cells.count >= 5 else { return nil }
            func unquote(_ s: String) -> String { s.trimmingCharacters(in: CharacterSet(charactersIn: "`")) }
            return Row(flag: unquote(cells[1]), env: unquote(cells[2]), defaultValue: cells[3])
        }
    }

    @Test func operationsReferenceListsEveryServeOptionWithItsVariableAndDefault() throws {
        let documented = Self.documentedRows(try Repo.text("docs/operations.md"))
        let expected = Self.expectedRows()
        #expect(
            documented == expected,
            Comment(
                rawValue: "docs/operations.md's configuration table differs from ServeSettings.options; expected rows, in order:\n"
                    + expected.map(\.description).joined(separator: "\n")))
        // --check-config is a flag without a variable: documented in prose.
        #expect(try Repo.text("docs/operations.md").contains("--check-config"))
    }

    /// Every `HERALD_…` variable herald reads: the serve table plus the literals the other
    /// verbs read (`HERALD_SERVER`, `HERALD_SIM_…`).
    static func knownVariables() throws -> Set<String> {
        var known = Set(ServeSettings.options.map(\.env))
        let sources = Repo.path("Sources/HeraldCLI")
        for file in try FileManager.default.contentsOfDirectory(atPath: sources) where file.hasSuffix(".swift") {
            let text = try String(contentsOfFile: sources + "/" + file, encoding: .utf8)
            known.formUnion(variables(in: text, quoted: true))
        }
        return known
    }

    /// `HERALD_…` names in a text (only those in double quotes when `quoted`). A name ending
    /// in `_` is a prefix in prose (`HERALD_APNS_*`) and is skipped.
    static func variables(in text: String, quoted: Bool = false) -> Set<String> {
        var out = Set<String>()
        var rest = Substring(text)
        while let r = rest.range(of: "HERALD_") {
            var end = r.upperBound
            while end < rest.endIndex, rest[end].isUppercase || rest[end].isNumber || rest[end] == "_" { end = rest.index(after: end) }
            let name = String(rest[r.lowerBound..<end])
            let before = r.lowerBound > rest.startIndex ? rest[rest.index(before: r.lowerBound)] : " "
            let after = end < rest.endIndex ? rest[end] : " "
            if !name.hasSuffix("_") && (!quoted || (before == "\"" && after == "\"")) { out.insert(name) }
            rest = rest[end...]
        }
        return out
    }

    @Test func deployFilesUseOnlyVariablesHeraldReads() throws {
        let known = try Self.knownVariables()
        #expect(known.contains("HERALD_SERVER") && known.contains("HERALD_SIM_DIR"))  // the scan works
        let files = [
            "Deploy/Dockerfile", "Deploy/compose.yaml", "Deploy/systemd/herald.service", "Deploy/systemd/herald.env",
            "Deploy/kubernetes/configmap.yaml", "Deploy/kubernetes/statefulset.yaml", "docs/operations.md", "docs/api.md",
            "Deploy/compose-postgres.yaml", "Deploy/kubernetes/workers/configmap.yaml", "Deploy/kubernetes/workers/deployment.yaml",
        ]
        for file in files {
            let unknown = Self.variables(in: try Repo.text(file)).subtracting(known)
            #expect(unknown.isEmpty, "\(file) names variables herald does not read: \(unknown.sorted())")
        }
    }

    /// `VAR=value` lines of an environment file, comments and blanks skipped.
    static func environmentFile(_ text: String) -> [String: String] {
        var env: [String: String] = [:]
        for line in text.split(separator: "\n") {
            let t = line.trimmingCharacters(in: .whitespaces)
            guard !t.isEmpty, !t.hasPrefix("#"), let eq = t.firstIndex(of: "=") else { continue }
            env[String(t[..<eq])] = String(t[t.index(after: eq)...])
        }
        return env
    }

    @Test func systemdEnvironmentTemplateCoversEverySettingAndParses() throws {
        let template = try Repo.text("Deploy/systemd/herald.env")
        for option in ServeSettings.options {
            #expect(template.contains(option.env + "="), "herald.env does not mention \(option.env)")
        }
        // What the unit sets with Environment=, then the file (which systemd lets override it).
        var env: [String: String] = [:]
        for line in try Repo.text("Deploy/systemd/herald.service").split(separator: "\n") where line.hasPrefix("Environment=") {
            env.merge(Self.environmentFile(String(line.dropFirst("Environment=".count)))) { $1 }
        }
        env.merge(Self.environmentFile(template)) { $1 }
        var args = Arguments([], environment: env)
        let settings = try ServeSettings.read(&args)
        #expect(settings.db == "/var/lib/herald/herald.db")
        #expect(settings.apnsKeyFile == "%d/apns-key.p8")
        #expect(settings.apnsKeyID != nil && settings.apnsTeamID != nil)
        #expect(settings.listen.host == "127.0.0.1")
    }
}
