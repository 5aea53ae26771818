/// The `priority` request field (RFC 9218 §4, a Structured Fields dictionary), parsed as
/// nghttp2 1.52 parses it (`nghttp2_http_parse_priority` and its `sf_parse_*`, not exported
/// by the library): `u` an integer 0...7, `i` a boolean, every other member skipped but
/// still well formed. A server session needs it because it turns nghttp2's HTTP messaging
/// off (`HTTP2RequestCheck`), which also turns off nghttp2's reading of this field.
enum HTTP2Priority {
    /// Updates `urgency` and `incremental` from `v`; false (and both untouched) when `v` is
    /// not a valid dictionary or `u`/`i` have the wrong type or range.
    static func parse(_ v: UnsafeBufferPointer<UInt8>, urgency: inout UInt8, incremental: inout Bool) -> Bool {
        var p = 0
        let end = v.count
        var u = urgency
        var inc = incremental
        while p != end && v[p] == 0x20 { p += 1 }
        while p != end {
            guard let keyLen = key(v, p) else { return false }
            let keyStart = p
            p += keyLen
            var item = Item.boolean(true)
            if p == end || v[p] != UInt8(ascii: "=") {
                guard let n = params(v, p) else { return false }
                p += n
            } else {
                p += 1
                if p == end { return false }
                guard let (n, it) = itemOrInnerList(v, p) else { return false }
                p += n
                item = it
            }
            if keyLen == 1 {
                switch v[keyStart] {
                case UInt8(ascii: "i"):
                    guard case .boolean(let b) = item else { return false }
                    inc = b
                case UInt8(ascii: "u"):
                    guard case .integer(let i) = item, i >= 0, i <= 7 else { return false }
                    u = UInt8(i)
                default: break
                }
            }
            // OWS, then ",", then OWS and another member.
            while p != end && (v[p] == 0x20 || v[p] == 0x09) { p += 1 }
            if p == end { break }
            guard v[p] == UInt8(ascii: ",") else { return false }
            p += 1
            while p != end && (v[p] == 0x20 || v[p] == 0x09) { p += 1 }
            if p == end { return false }
        }
        urgency = u
        incremental = inc
        return true
    }

    enum Item {
        case integer(Int64)
        case boolean(Bool)
        case other
    }

    private static func isLower(_ c: UInt8) -> Bool { c >= 97 && c <= 122 }
    private static func isUpper(_ c: UInt8) -> Bool { c >= 65 && c <= 90 }
    private static func isDigit(_ c: UInt8) -> Bool { c >= 48 && c <= 57 }

    /// `sf_parse_key` at `p` (not at the end): its length, nil when it does not start one.
    static func key(_ v: UnsafeBufferPointer<UInt8>, _ p: Int) -> Int? {
        guard isLower(v[p]) || v[p] == UInt8(ascii: "*") else { return nil }
        var q = p
        while q != v.count, isLower(v[q]) || isDigit(v[q]) || "_-.*".utf8.contains(v[q]) { q += 1 }
        return q - p
    }

    /// `sf_parse_params`: the length of `;key[=bare-item]…` at `p`, nil when malformed.
    static func params(_ v: UnsafeBufferPointer<UInt8>, _ p0: Int) -> Int? {
        var p = p0
        let end = v.count
        while p != end && v[p] == UInt8(ascii: ";") {
            p += 1
            while p != end && v[p] == 0x20 { p += 1 }
            if p == end { return nil }
            guard let k = key(v, p) else { return nil }
            p += k
            if p == end || v[p] != UInt8(ascii: "=") { continue }
            p += 1
            if p == end { return nil }
            guard let (n, _) = bareItem(v, p) else { return nil }
            p += n
        }
        return p - p0
    }

    static func itemOrInnerList(_ v: UnsafeBufferPointer<UInt8>, _ p: Int) -> (Int, Item)? {
        v[p] == UInt8(ascii: "(") ? innerList(v, p) : item(v, p)
    }

    static func item(_ v: UnsafeBufferPointer<UInt8>, _ p: Int) -> (Int, Item)? {
        guard let (n, it) = bareItem(v, p), let m = params(v, p + n) else { return nil }
        return (n + m, it)
    }

    static func innerList(_ v: UnsafeBufferPointer<UInt8>, _ p0: Int) -> (Int, Item)? {
        var p = p0 + 1
        let end = v.count
        while true {
            while p != end && v[p] == 0x20 { p += 1 }
            if p == end { return nil }
            if v[p] == UInt8(ascii: ")") {
                p += 1
                guard let m = params(v, p) else { return nil }
                return (p + m - p0, .other)
            }
            guard let (n, _) = item(v, p) else { return nil }
            p += n
            if p == end || (v[p] != 0x20 && v[p] != UInt8(ascii: ")")) { return nil }
        }
    }

    static func bareItem(_ v: UnsafeBufferPointer<UInt8>, _ p: Int) -> (Int, Item)? {
        let c = v[p]
        switch c {
        case UInt8(ascii: "-"), 48...57: return number(v, p)
        case UInt8(ascii: "\""): return string(v, p)
        case UInt8(ascii: ":"): return byteSequence(v, p)
        case UInt8(ascii: "?"):
            guard p + 1 != v.count else { return nil }
            switch v[p + 1] {
            case 48: return (2, .boolean(false))
            case 49: return (2, .boolean(true))
            default: return nil
            }
        default:
            guard isUpper(c) || isLower(c) || c == UInt8(ascii: "*") else { return nil }
            var q = p
            while q != v.count, isUpper(v[q]) || isLower(v[q]) || isDigit(v[q]) || "!#$%&'*+-.^_`|~:/".utf8.contains(v[q]) {
                q += 1
            }
            return (q - p, .other)
        }
    }

    /// `sf_parse_integer_or_decimal`: at most 15 digits, a decimal's at most 12 before and 3
    /// after its point.
    static func number(_ v: UnsafeBufferPointer<UInt8>, _ p0: Int) -> (Int, Item)? {
        var p = p0
        let end = v.count
        var sign: Int64 = 1
        if v[p] == UInt8(ascii: "-") {
            p += 1
            if p == end { return nil }
            sign = -1
        }
        guard isDigit(v[p]) else { return nil }
        var value: Int64 = 0
        var len = 0
        var decimal = false
        var fpos = 0
        scan: while p != end {
            switch v[p] {
            case 48...57:
                value = value * 10 + Int64(v[p] - 48)
                len += 1
                if len > 15 { return nil }
            case UInt8(ascii: "."):
                if decimal { break scan }
                if len > 12 { return nil }
                fpos = len
                decimal = true
            default:
                break scan
            }
            p += 1
        }
        if decimal {
            if fpos == len || len - fpos > 3 { return nil }
            return (p - p0, .other)
        }
        return (p - p0, .integer(value * sign))
    }

    /// `sf_parse_string`: printable ASCII between quotes, `\"` and `\\` escaped.
    static func string(_ v: UnsafeBufferPointer<UInt8>, _ p0: Int) -> (Int, Item)? {
        var p = p0 + 1
        while p != v.count {
            switch v[p] {
            case UInt8(ascii: "\\"):
                p += 1
                if p == v.count { return nil }
                guard v[p] == UInt8(ascii: "\"") || v[p] == UInt8(ascii: "\\") else { return nil }
            case UInt8(ascii: "\""):
                return (p + 1 - p0, .other)
            default:
                guard v[p] >= 0x20 && v[p] <= 0x7E else { return nil }
            }
            p += 1
        }
        return nil
    }

    /// `sf_parse_byteseq`: base64 characters between colons.
    static func byteSequence(_ v: UnsafeBufferPointer<UInt8>, _ p0: Int) -> (Int, Item)? {
        var p = p0 + 1
        while p != v.count {
            let c = v[p]
            if c == UInt8(ascii: ":") { return (p + 1 - p0, .other) }
            guard isUpper(c) || isLower(c) || isDigit(c) || c == UInt8(ascii: "+") || c == UInt8(ascii: "/") || c == UInt8(ascii: "=")
            else { return nil }
            p += 1
        }
        return nil
    }
}
