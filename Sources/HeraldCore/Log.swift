import Foundation

/// Log levels, ordered.
public enum LogLevel: Int, Sendable, Comparable, CaseIterable {
    case debug = 0
    case info, warning, error

    public static func < (a: LogLevel, b: LogLevel) -> Bool { a.rawValue < b.rawValue }

    public var name: String {
        switch self {
        case .debug: "debug"
        case .info: "info"
        case .warning: "warning"
        case .error: "error"
        }
    }

    public init?(name: String) {
        guard let l = LogLevel.allCases.first(where: { $0.name == name.lowercased() }) else { return nil }
        self = l
    }
}

/// A value that never prints itself: for keys, tokens and the .p8 contents.
public struct Redacted<Value: Sendable>: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    public let value: Value
    public init(_ value: Value) { self.value = value }
    public var description: String { "<redacted>" }
    public var debugDescription: String { "<redacted>" }
}

/// Where log lines go. One JSON object per line (style §12).
public final class LogSink: Sendable {
    private let state: Locked<State>

    struct State {
        var level: LogLevel
        var write: @Sendable (String) -> Void
    }

    public init(level: LogLevel = .info, write: @escaping @Sendable (String) -> Void) {
        state = Locked(State(level: level, write: write))
    }

    /// Lines to standard error.
    public static func standardError(level: LogLevel = .info) -> LogSink {
        LogSink(level: level) { line in
            var l = line
            l.append("\n")
            // One write(2) per line keeps lines whole when several threads log.
            l.utf8CString.withUnsafeBufferPointer { p in _ = write(2, p.baseAddress, p.count - 1) }
        }
    }

    /// Discards everything (tests that don't look at logs).
    public static let discard = LogSink(level: .error) { _ in }

    public var level: LogLevel {
        get { state.withLock { $0.level } }
        set { state.withLock { $0.level = newValue } }
    }

    func emit(_ level: LogLevel, _ line: @autoclosure () -> String) {
        state.withLock { s in
            guard level >= s.level else { return }
            s.write(line())
        }
    }
}

/// A subsystem's logger: `log.info("apns.goaway", ["reason": "Shutdown"])` writes
/// `{"ts":"…","level":"info","event":"apns.goaway","subsystem":"sender","reason":"Shutdown"}`.
public struct Logger: Sendable {
    public let subsystem: String
    public let sink: LogSink

    public init(subsystem: String, sink: LogSink) {
        self.subsystem = subsystem
        self.sink = sink
    }

    public static let discard = Logger(subsystem: "test", sink: .discard)

    public func with(subsystem: String) -> Logger { Logger(subsystem: subsystem, sink: sink) }

    public func debug(_ event: String, _ fields: @autoclosure () -> [String: JSON] = [:]) {
        log(.debug, event, fields())
    }
    public func info(_ event: String, _ fields: @autoclosure () -> [String: JSON] = [:]) {
        log(.info, event, fields())
    }
    public func warning(_ event: String, _ fields: @autoclosure () -> [String: JSON] = [:]) {
        log(.warning, event, fields())
    }
    public func error(_ event: String, _ fields: @autoclosure () -> [String: JSON] = [:]) {
        log(.error, event, fields())
    }

    public func log(_ level: LogLevel, _ event: String, _ fields: @autoclosure () -> [String: JSON]) {
        sink.emit(level, Logger.line(level: level, event: event, subsystem: subsystem, fields: fields()))
    }

    static func line(level: LogLevel, event: String, subsystem: String, fields: [String: JSON]) -> String {
        // "event" first so a human can scan the log, then the fields in a stable order.
        var head: [String] = [
            "\"ts\":" + JSON.string(Timestamp.iso8601(Date())).text,
            "\"level\":\"\(level.name)\"",
            "\"event\":" + JSON.string(event).text,
            "\"subsystem\":" + JSON.string(subsystem).text,
        ]
        for key in fields.keys.sorted() {
            head.append(JSON.string(key).text + ":" + fields[key]!.text)
        }
        return "{" + head.joined(separator: ",") + "}"
    }
}

/// Timestamp formatting.
public enum Timestamp {
    /// RFC 3339 UTC with milliseconds.
    public static func iso8601(_ date: Date) -> String {
        let ms = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        var t = time_t(ms / 1000)
        var tmv = tm()
        gmtime_r(&t, &tmv)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", Int(tmv.tm_year) + 1900, Int(tmv.tm_mon) + 1,
            Int(tmv.tm_mday), Int(tmv.tm_hour), Int(tmv.tm_min), Int(tmv.tm_sec), Int(ms % 1000))
    }
}
