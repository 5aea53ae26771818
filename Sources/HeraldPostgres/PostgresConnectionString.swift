import CPostgres
import Foundation

/// Where to connect: a `postgresql://` or `postgres://` URL, or a libpq `key=value`
/// string, as libpq reads them (`PQconninfoParse`).
///
/// **A password is refused here**: it comes from `PGPASSWORD` or `~/.pgpass` (or a
/// `passfile=` named in the string), so the string itself is safe to put in a
/// Kubernetes manifest and can never reach a log. Every error and log shows `redacted`,
/// which masks a password anyway, should one slip past (an unparsable string).
public struct PostgresConnectionString: Sendable, Hashable, CustomStringConvertible {
    /// The text as given (it holds no password: `init` refuses one).
    public let text: String

    /// Checks `text` with libpq's own parser.
    /// - Throws: `PostgresError` `.configuration` when libpq cannot parse it (its message
    ///   with any password masked) or when it carries a password.
    public init(_ text: String) throws(PostgresError) {
        var message: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(text, &message) else {
            let why = message.map { String(cString: $0) } ?? "out of memory"
            if let message { PQfreemem(message) }
            throw PostgresError(
                kind: .configuration,
                message: Self.mask(PostgresError.trimmed(why, or: "unparsable"), secretsOf: text),
                target: Self.redact(text))
        }
        defer { PQconninfoFree(options) }
        var p = options
        while let keyword = p.pointee.keyword {
            if String(cString: keyword) == "password", p.pointee.val != nil {
                throw PostgresError(
                    kind: .configuration,
                    message: "the connection string carries a password; give it in PGPASSWORD or ~/.pgpass instead",
                    target: Self.redact(text))
            }
            p += 1
        }
        self.text = text
    }

    /// The string with any password replaced by `<redacted>`: what errors and logs show.
    public var redacted: String { Self.redact(text) }

    public var description: String { redacted }

    /// Masks the password in a URL's user info (`user:secret@`), in a `password=` query
    /// parameter and in a `password=` key of a key=value string. Textual, so it works on
    /// strings libpq cannot parse.
    public static func redact(_ text: String) -> String {
        var s = text
        for r in passwordRanges(in: text).reversed() { s.replaceSubrange(r, with: "<redacted>") }
        return s
    }

    /// `message` with every password piece of `text` masked: libpq's parse errors quote
    /// the fragment they choke on.
    static func mask(_ message: String, secretsOf text: String) -> String {
        var m = message
        for r in passwordRanges(in: text) where !r.isEmpty {
            m = m.replacingOccurrences(of: String(text[r]), with: "<redacted>")
        }
        return redact(m)
    }

    /// Where passwords sit in `text`: the URL's user-info password, and the value of every
    /// `password=` (a query parameter, `&`-separated, or a key=value pair, space-separated
    /// and possibly single-quoted). Ascending and disjoint.
    static func passwordRanges(in text: String) -> [Range<String.Index>] {
        var ranges: [Range<String.Index>] = []
        var searchFrom = text.startIndex
        if let scheme = text.range(of: "://"),
            ["postgresql", "postgres"].contains(text[..<scheme.lowerBound].lowercased())
        {
            let authorityEnd = text[scheme.upperBound...].firstIndex(where: { $0 == "/" || $0 == "?" }) ?? text.endIndex
            if let at = text[scheme.upperBound..<authorityEnd].lastIndex(of: "@") {
                if let colon = text[scheme.upperBound..<at].firstIndex(of: ":") {
                    ranges.append(text.index(after: colon)..<at)
                }
                searchFrom = at
            }
        }
        while let key = text.range(of: "password", options: .caseInsensitive, range: searchFrom..<text.endIndex) {
            searchFrom = key.upperBound
            var i = key.upperBound
            while i < text.endIndex, text[i] == " " { i = text.index(after: i) }
            guard i < text.endIndex, text[i] == "=" else { continue }
            i = text.index(after: i)
            while i < text.endIndex, text[i] == " " { i = text.index(after: i) }
            let valueStart = i
            if i < text.endIndex, text[i] == "'" {
                i = text.index(after: i)
                while i < text.endIndex, text[i] != "'" {
                    if text[i] == "\\" { i = text.index(after: i) }
                    if i < text.endIndex { i = text.index(after: i) }
                }
                if i < text.endIndex { i = text.index(after: i) }
            } else {
                while i < text.endIndex, text[i] != " ", text[i] != "&" { i = text.index(after: i) }
            }
            ranges.append(valueStart..<i)
            searchFrom = i
        }
        return ranges
    }
}

extension String {
    /// Every occurrence of `target` replaced (no Foundation needed by callers).
    func replacingAll(_ target: String, with replacement: String) -> String {
        guard !target.isEmpty else { return self }
        var out = ""
        var rest = Substring(self)
        while let r = rest.firstRange(of: target) {
            out += rest[..<r.lowerBound] + replacement
            rest = rest[r.upperBound...]
        }
        return out + rest
    }
}
