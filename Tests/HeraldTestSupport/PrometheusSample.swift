import Foundation

/// One scrape of a Prometheus text exposition, parsed into series: how the fault tests read
/// what `/metrics` says happened.
public struct PrometheusSample: Sendable {
    /// One line of the exposition: name, labels, value.
    public struct Series: Sendable {
        public var name: String
        public var labels: [String: String]
        public var value: Double
    }

    public let series: [Series]

    /// Parses `text` (comments skipped). Lines that are not `name{labels} value` are ignored.
    public init(_ text: String) {
        var out: [Series] = []
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
            let head = line[..<space]
            var labels: [String: String] = [:]
            let name: Substring
            if let open = head.firstIndex(of: "{"), head.hasSuffix("}") {
                name = head[..<open]
                labels = Self.labels(head[head.index(after: open)..<head.index(before: head.endIndex)])
            } else {
                name = head
            }
            out.append(Series(name: String(name), labels: labels, value: value))
        }
        series = out
    }

    /// `a="x",b="y"` (values may contain escaped quotes).
    static func labels(_ s: Substring) -> [String: String] {
        var out: [String: String] = [:]
        var i = s.startIndex
        while i < s.endIndex {
            guard let eq = s[i...].firstIndex(of: "=") else { break }
            let key = s[i..<eq].trimmingCharacters(in: CharacterSet(charactersIn: ", "))
            var j = s.index(eq, offsetBy: 2, limitedBy: s.endIndex) ?? s.endIndex  // past `="`
            var value = ""
            while j < s.endIndex && s[j] != "\"" {
                if s[j] == "\\", s.index(after: j) < s.endIndex {
                    j = s.index(after: j)
                }
                value.append(s[j])
                j = s.index(after: j)
            }
            out[key] = value
            i = j < s.endIndex ? s.index(after: j) : j
        }
        return out
    }

    /// The sum of every series named `name` whose labels include `labels` (0 when none).
    public func sum(_ name: String, _ labels: [String: String] = [:]) -> Double {
        series.filter { s in s.name == name && labels.allSatisfy { k, v in s.labels[k] == v } }.reduce(0) { $0 + $1.value }
    }

    /// Whether a series named `name` with at least `labels` exists.
    public func has(_ name: String, _ labels: [String: String] = [:]) -> Bool {
        series.contains { s in s.name == name && labels.allSatisfy { k, v in s.labels[k] == v } }
    }
}
