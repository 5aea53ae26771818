import Foundation
import HeraldCore

/// How client verbs print: the server's JSON pretty-printed, aligned tables, `key: value`
/// lines, and numbers and times a person can read.
enum TextOutput {
    /// `value` indented, keys sorted (stable output for scripts and diffs).
    static func prettyJSON(_ value: JSON) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let data = (try? encoder.encode(value)) ?? Data("null".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    /// Columns padded to their widest cell, two spaces apart, no trailing blanks.
    static func table(_ headers: [String], _ rows: [[String]]) -> String {
        let all = [headers] + rows
        var widths = [Int](repeating: 0, count: headers.count)
        for row in all { for (i, cell) in row.enumerated() where i < widths.count { widths[i] = max(widths[i], cell.count) } }
        return all.map { row in
            row.enumerated().map { i, cell in
                i == row.count - 1 ? cell : cell.padding(toLength: widths[i], withPad: " ", startingAt: 0)
            }.joined(separator: "  ").trimmingTrailingSpaces()
        }.joined(separator: "\n")
    }

    /// `key: value` lines with the values aligned.
    static func fields(_ pairs: [(String, String)]) -> String {
        let width = (pairs.map { $0.0.count }.max() ?? 0) + 1
        return pairs.map { k, v in (k + ":").padding(toLength: width, withPad: " ", startingAt: 0) + " " + v }
            .joined(separator: "\n")
    }

    /// 1234567 → "1,234,567".
    static func count(_ n: Int64) -> String {
        let digits = String(n.magnitude)
        var out = ""
        for (i, c) in digits.enumerated() {
            if i > 0 && (digits.count - i) % 3 == 0 { out.append(",") }
            out.append(c)
        }
        return n < 0 ? "-" + out : out
    }

    static func count(_ n: Int) -> String { count(Int64(n)) }

    /// A JSON number as a count, "-" when absent.
    static func count(_ j: JSON?) -> String { j?.intValue.map { count($0) } ?? "-" }

    /// Unix seconds as `2026-01-01T00:00:00Z`; "-" for null or absent.
    static func time(_ j: JSON?) -> String {
        guard let s = j?.intValue else { return "-" }
        var t = time_t(s)
        var tmv = tm()
        gmtime_r(&t, &tmv)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02dZ", Int(tmv.tm_year) + 1900, Int(tmv.tm_mon) + 1, Int(tmv.tm_mday),
            Int(tmv.tm_hour), Int(tmv.tm_min), Int(tmv.tm_sec))
    }

    /// A scalar for display: strings bare, null/absent as "-", anything else as compact JSON.
    static func text(_ j: JSON?) -> String {
        switch j {
        case nil, .null?: "-"
        case .string(let s)?: s.isEmpty ? "-" : s
        case let v?: v.text
        }
    }

    /// Seconds with one decimal below a minute: "2.6 s", "1 min 5 s".
    static func duration(_ s: Double) -> String {
        if s < 60 { return String(format: "%.1f s", s) }
        let whole = Int(s.rounded())
        return "\(whole / 60) min \(whole % 60) s"
    }
}

extension String {
    func trimmingTrailingSpaces() -> String {
        var s = Substring(self)
        while s.last == " " { s = s.dropLast() }
        return String(s)
    }
}
