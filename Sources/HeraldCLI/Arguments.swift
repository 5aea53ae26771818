import Foundation

/// A usage mistake: printed with the verb's help hint, exit code 2.
public struct UsageError: Error, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// A failure to report: printed, exit code 1.
public struct CommandFailure: Error, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// Reads a verb's arguments: options (`--name value`, `--name=value`), flags, positionals.
/// Every option may have an environment variable; the command line wins. Options are
/// consumed as they are read; `finish()` refuses whatever is left (exit 2).
public struct Arguments {
    private var items: [String]
    public let environment: [String: String]
    /// True when `--help` or `-h` was given (the verb prints its help and exits 0).
    public let wantsHelp: Bool

    public init(_ args: [String], environment: [String: String]) {
        var rest: [String] = []
        var help = false
        var literal = false
        for a in args {
            if literal {
                rest.append(a)
            } else if a == "--" {
                literal = true
                rest.append(a)
            } else if a == "--help" || a == "-h" {
                help = true
            } else {
                rest.append(a)
            }
        }
        items = rest
        self.environment = environment
        wantsHelp = help
    }

    /// The value of `--name` (or `--name=value`), else of `env`, else nil.
    public mutating func option(_ name: String, env: String? = nil) throws -> String? {
        var found: String?
        var i = 0
        while i < items.count {
            let a = items[i]
            if a == "--" { break }
            if a == name {
                guard i + 1 < items.count, !(items[i + 1].hasPrefix("--") && items[i + 1].count > 2) else {
                    throw UsageError("\(name) needs a value")
                }
                found = items[i + 1]
                items.removeSubrange(i...(i + 1))
                continue
            }
            if a.hasPrefix(name + "=") {
                found = String(a.dropFirst(name.count + 1))
                items.remove(at: i)
                continue
            }
            i += 1
        }
        if found == nil, let env, let v = environment[env], !v.isEmpty { found = v }
        return found
    }

    /// `option` with a default.
    public mutating func option(_ name: String, env: String? = nil, default value: String) throws -> String {
        try option(name, env: env) ?? value
    }

    /// Every value of a repeatable option, plus following values that are not options
    /// (`--channels a b c`).
    public mutating func options(_ name: String) throws -> [String] {
        var out: [String] = []
        var i = 0
        while i < items.count {
            if items[i] == "--" { break }
            if items[i] == name {
                items.remove(at: i)
                var took = 0
                while i < items.count && !items[i].hasPrefix("--") {
                    out.append(items.remove(at: i))
                    took += 1
                }
                if took == 0 { throw UsageError("\(name) needs a value") }
                continue
            }
            if items[i].hasPrefix(name + "=") {
                out.append(String(items.remove(at: i).dropFirst(name.count + 1)))
                continue
            }
            i += 1
        }
        return out
    }

    /// An integer option within `range`.
    public mutating func intOption(_ name: String, env: String? = nil, range: ClosedRange<Int>) throws -> Int? {
        guard let v = try option(name, env: env) else { return nil }
        guard let n = Int(v), range.contains(n) else {
            throw UsageError("\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound), got '\(v)'")
        }
        return n
    }

    /// True when `--name` is present (removed).
    public mutating func flag(_ name: String, env: String? = nil) -> Bool {
        if let i = items.firstIndex(of: name), items[..<i].firstIndex(of: "--") == nil {
            items.remove(at: i)
            return true
        }
        if let env, let v = environment[env] { return ["1", "true", "yes", "on"].contains(v.lowercased()) }
        return false
    }

    /// The next positional argument, or a usage error naming it.
    public mutating func positional(_ what: String) throws -> String {
        guard let v = nextPositional() else { throw UsageError("missing \(what)") }
        return v
    }

    /// The next positional argument if any.
    public mutating func nextPositional() -> String? {
        if let i = items.firstIndex(where: { !$0.hasPrefix("--") || $0 == "--" }) {
            if items[i] == "--" {
                items.remove(at: i)
                return i < items.count ? items.remove(at: i) : nil
            }
            return items.remove(at: i)
        }
        return nil
    }

    /// All remaining positional arguments.
    public mutating func remainingPositionals() -> [String] {
        var out: [String] = []
        while let p = nextPositional() { out.append(p) }
        return out
    }

    /// Refuses anything not consumed.
    public func finish() throws {
        if let first = items.first(where: { $0 != "--" }) {
            throw UsageError(first.hasPrefix("-") ? "unknown option \(first)" : "unexpected argument '\(first)'")
        }
    }
}
