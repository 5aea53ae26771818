import Foundation

/// Where a command writes. Tests capture it; the binary uses stdout/stderr.
public final class Console: @unchecked Sendable {
    // @unchecked: writes go straight to file descriptors; `captured` is guarded by `lock`.
    private let lock = NSLock()
    private var out: [UInt8]?
    private var err: [UInt8]?
    /// True when standard error is a terminal (live progress lines redraw in place).
    public let isTTY: Bool

    /// `isTTY` overrides the terminal check (tests of redrawn progress lines).
    public init(capture: Bool = false, isTTY: Bool? = nil) {
        if capture {
            out = []
            err = []
        }
        self.isTTY = isTTY ?? (!capture && isatty(2) == 1)
    }

    public func print(_ s: String = "") { write(s + "\n", toError: false) }
    public func error(_ s: String) { write(s + "\n", toError: true) }

    public func write(_ s: String, toError: Bool) {
        lock.lock()
        defer { lock.unlock() }
        if out != nil {
            if toError { err!.append(contentsOf: s.utf8) } else { out!.append(contentsOf: s.utf8) }
            return
        }
        var bytes = Array(s.utf8)
        var off = 0
        while off < bytes.count {
            let n = bytes.withUnsafeMutableBytes { Glibc.write(toError ? 2 : 1, $0.baseAddress! + off, $0.count - off) }
            if n <= 0 { break }
            off += n
        }
        bytes.removeAll()
    }

    /// What was written, when capturing.
    public var capturedOutput: String {
        lock.lock()
        defer { lock.unlock() }
        return String(decoding: out ?? [], as: UTF8.self)
    }
    public var capturedError: String {
        lock.lock()
        defer { lock.unlock() }
        return String(decoding: err ?? [], as: UTF8.self)
    }
}

/// A `herald` verb.
public protocol HeraldCommand: Sendable {
    /// The verb (`serve`, `channels`, ...).
    static var name: String { get }
    /// One line for `herald --help`.
    static var summary: String { get }
    /// Full help text for `herald <verb> --help`.
    static var help: String { get }
    /// Runs the verb. Throws `UsageError` (exit 2) or `CommandFailure` (exit 1); returns the
    /// exit code otherwise.
    static func run(_ args: inout Arguments, console: Console) throws -> Int32
    /// Help for `herald <verb> <sub-verb> --help`; `subcommand` is the first positional
    /// argument, if any. The default is `help`.
    static func help(subcommand: String?) -> String
}

extension HeraldCommand {
    public static func help(subcommand: String?) -> String { help }
}

/// Exit codes (design: 0 ok, 1 failure, 2 usage).
public enum ExitCode {
    public static let ok: Int32 = 0
    public static let failure: Int32 = 1
    public static let usage: Int32 = 2
}
