import Foundation
import HeraldCore

/// A fresh directory under the system temp dir, removed after `body`.
func withTemporaryDirectory<R>(_ body: (String) throws -> R) throws -> R {
    let path = FileManager.default.temporaryDirectory
        .appendingPathComponent("herald-crypto-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
    defer { try? FileManager.default.removeItem(atPath: path) }
    return try body(path)
}

/// The result of running the `openssl` command-line tool.
struct CommandResult {
    var status: Int32
    var output: String
    var errors: String
}

/// Runs `openssl <arguments>` in `directory` and waits for it. Outputs are small (a PEM,
/// a line of text), so reading the pipes after exit cannot deadlock.
func openssl(_ arguments: [String], in directory: String) throws -> CommandResult {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
    process.arguments = arguments
    process.currentDirectoryURL = URL(fileURLWithPath: directory)
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    process.standardInput = FileHandle.nullDevice
    try process.run()
    let output = out.fileHandleForReading.readDataToEndOfFile()
    let errors = err.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return CommandResult(
        status: process.terminationStatus, output: String(decoding: output, as: UTF8.self),
        errors: String(decoding: errors, as: UTF8.self))
}

func readText(_ path: String) throws -> String {
    try String(contentsOfFile: path, encoding: .utf8)
}

func writeBytes(_ bytes: [UInt8], _ path: String) throws {
    try Data(bytes).write(to: URL(fileURLWithPath: path))
}

func readBytes(_ path: String) throws -> [UInt8] {
    [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
}

/// Booleans written from several threads.
final class Results: Sendable {
    private let values: Locked<[Bool]>
    init(count: Int) { values = Locked([Bool](repeating: false, count: count)) }
    func set(_ i: Int, _ v: Bool) { values.withLock { $0[i] = v } }
    var all: Bool { values.withLock { $0.allSatisfy { $0 } } }
}
