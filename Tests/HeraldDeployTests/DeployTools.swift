import Foundation
import HeraldCore

/// The repository and the files under it.
enum Repo {
    /// The checkout's root: this file is Tests/HeraldDeployTests/DeployTools.swift.
    static let root: URL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static func path(_ relative: String) -> String { root.appendingPathComponent(relative).path }

    static func text(_ relative: String) throws -> String { try String(contentsOfFile: path(relative), encoding: .utf8) }

    static func exists(_ relative: String) -> Bool { FileManager.default.fileExists(atPath: path(relative)) }

    /// The `herald` executable `swift build --build-tests` put beside the test bundle.
    static var heraldExecutable: String? {
        let candidates = [
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("herald").path,
            Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent("herald").path,
            path(".build/debug/herald"),
        ]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}

/// External programs the deploy tests drive. Each test that needs one is enabled only when
/// it is installed, and says which Debian package provides it when skipped.
enum Tool {
    /// `name` found on PATH, or nil.
    static func find(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for dir in path.split(separator: ":") {
            let candidate = "\(dir)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    static let promtool = find("promtool")
    static let systemdAnalyze = find("systemd-analyze")
    static let systemdSysusers = find("systemd-sysusers")
    /// python3 that can `import yaml` (Debian: python3-yaml).
    static let python3WithYAML: String? = {
        guard let python = find("python3") else { return nil }
        return (try? run(python, ["-c", "import yaml"]).status) == 0 ? python : nil
    }()

    /// What a finished program said.
    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
        var output: String { stdout + stderr }
    }

    /// Runs `executable` to completion. Output goes through temporary files, so a chatty
    /// program cannot fill a pipe and block.
    static func run(_ executable: String, _ arguments: [String], directory: String? = nil) throws -> Result {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("herald-tool-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("out")
        let err = dir.appendingPathComponent("err")
        try Data().write(to: out)
        try Data().write(to: err)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = arguments
        if let directory { p.currentDirectoryURL = URL(fileURLWithPath: directory) }
        let outHandle = try FileHandle(forWritingTo: out)
        let errHandle = try FileHandle(forWritingTo: err)
        p.standardOutput = outHandle
        p.standardError = errHandle
        p.standardInput = FileHandle.nullDevice
        try p.run()
        p.waitUntilExit()
        try outHandle.close()
        try errHandle.close()
        return Result(
            status: p.terminationStatus, stdout: try String(contentsOf: out, encoding: .utf8),
            stderr: try String(contentsOf: err, encoding: .utf8))
    }
}

/// YAML files read through python3's PyYAML (no YAML parser ships with the toolchain).
enum YAML {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Every document of the YAML file at `path` (absolute), as JSON.
    static func documents(_ path: String) throws -> [JSON] {
        guard let python = Tool.python3WithYAML else { throw Failure(description: "python3 with PyYAML is not installed") }
        let script = "import json, sys, yaml; print(json.dumps(list(yaml.safe_load_all(open(sys.argv[1])))))"
        let r = try Tool.run(python, ["-c", script, path])
        guard r.status == 0 else { throw Failure(description: "\(path) is not valid YAML: \(r.stderr)") }
        guard let docs = try JSON.parse(r.stdout).arrayValue else { throw Failure(description: "\(path): no documents") }
        return docs
    }

    /// The single document of a YAML file under the repository.
    static func load(_ relative: String) throws -> JSON {
        let docs = try documents(Repo.path(relative))
        guard docs.count == 1 else { throw Failure(description: "\(relative) has \(docs.count) documents, expected 1") }
        return docs[0]
    }
}

/// Names of Herald's metrics mentioned in a text: `herald_…` and `process_…` (a name
/// ending in `_` is a prefix in prose, `herald_<subsystem>_…`, and is skipped).
func metricNames(in text: String) -> Set<String> {
    var names = Set<String>()
    let bytes = Array(text.utf8)
    func isNameByte(_ b: UInt8) -> Bool {
        (b >= 0x61 && b <= 0x7A) || (b >= 0x30 && b <= 0x39) || b == 0x5F  // a-z 0-9 _
    }
    var i = 0
    while i < bytes.count {
        let startsWord = i == 0 || !(isNameByte(bytes[i - 1]) || (bytes[i - 1] >= 0x41 && bytes[i - 1] <= 0x5A))
        if startsWord, isNameByte(bytes[i]) {
            var j = i
            while j < bytes.count && isNameByte(bytes[j]) { j += 1 }
            let word = String(decoding: bytes[i..<j], as: UTF8.self)
            if (word.hasPrefix("herald_") || word.hasPrefix("process_")) && !word.hasSuffix("_") { names.insert(word) }
            i = j
        } else {
            i += 1
        }
    }
    return names
}

extension JSON {
    /// `self[a][b]…`, nil as soon as a step is missing.
    subscript(path path: String...) -> JSON? {
        var v: JSON? = self
        for k in path { v = v?[k] }
        return v
    }
}
