import Glibc
import HeraldCore
import HeraldNet

/// Where the fields the simulator reads are in a request (reference §3.1, §4.1), found in
/// one pass over the names: each lookup after that is an index, not a scan with a compare
/// per field. Also says whether a field came twice (DuplicateHeaders).
struct SimFields {
    var authorization = -1
    var topic = -1
    var pushType = -1
    var priority = -1
    var expiration = -1
    var id = -1
    var collapseID = -1
    var requestID = -1
    /// The id an answer echoes: `apns-id` when sent, else `apns-request-id`, when it is a
    /// lower-case UUID; -1 otherwise. Checked once here (the answer's echo and the token
    /// route's `BadMessageId` both read it).
    var echo = -1
    var duplicate = false

    /// The fields of `r` (tests; the handler reads them in place).
    init(_ r: HTTP2ServerRequest) {
        self = r.withFieldBytes { SimFields($0) }
    }

    init(_ r: HTTP2ServerRequest.FieldBytes) {
        var seen: UInt16 = 0
        var others = 0
        // The first few fields of other names (user-agent, content-length…): only those can
        // repeat each other unseen, the known names are counted above.
        var other: (Int, Int, Int, Int) = (-1, -1, -1, -1)
        // A plain loop over the view (inlined from HeraldNet), no closure per field.
        for i in 0..<r.count where !r.isPseudo(i) {
            let name = r.name(at: i)
            let bit: UInt16
            switch name.count {
            case 7 where Self.is(name, "apns-id"):
                id = i
                bit = 1
            case 10 where Self.is(name, "apns-topic"):
                topic = i
                bit = 2
            case 13 where Self.is(name, "authorization"):
                authorization = i
                bit = 4
            case 13 where Self.is(name, "apns-priority"):
                priority = i
                bit = 8
            case 14 where Self.is(name, "apns-push-type"):
                pushType = i
                bit = 16
            case 15 where Self.is(name, "apns-expiration"):
                expiration = i
                bit = 32
            case 15 where Self.is(name, "apns-request-id"):
                requestID = i
                bit = 64
            case 16 where Self.is(name, "apns-collapse-id"):
                collapseID = i
                bit = 128
            default:
                switch others {
                case 0: other.0 = i
                case 1: other.1 = i
                case 2: other.2 = i
                case 3: other.3 = i
                default: break
                }
                others += 1
                continue
            }
            if seen & bit != 0 { duplicate = true }
            seen |= bit
        }
        let sent = id >= 0 ? id : requestID
        if sent >= 0 && Identifiers.isLowercaseUUID(bytes: r.value(at: sent)) { echo = sent }
        // Two fields of other names may be the same one: compare those pairwise.
        if !duplicate && others > 1 {
            if others > 4 {
                duplicate = Self.anyDuplicate(r)
            } else {
                let o = other
                func at(_ k: Int) -> Int {
                    switch k {
                    case 0: o.0
                    case 1: o.1
                    case 2: o.2
                    default: o.3
                    }
                }
                for a in 0..<(others - 1) {
                    for b in (a + 1)..<others where r.sameName(at(a), at(b)) { duplicate = true }
                }
            }
        }
    }

    @inline(__always)
    static func `is`(_ b: UnsafeBufferPointer<UInt8>, _ s: StaticString) -> Bool {
        bytesMatch(b.baseAddress!, s.utf8Start, s.utf8CodeUnitCount)
    }

    /// True when two regular fields have the same name (pairwise: a handful of fields).
    static func anyDuplicate(_ r: HTTP2ServerRequest.FieldBytes) -> Bool {
        for i in 0..<r.count where !r.isPseudo(i) {
            for j in (i + 1)..<r.count where !r.isPseudo(j) && r.sameName(i, j) { return true }
        }
        return false
    }

    /// The value of the field at `index` (from one of the properties), nil when absent;
    /// valid only inside the `withFieldBytes` that gave `r`.
    @inline(__always)
    static func value(_ r: HTTP2ServerRequest.FieldBytes, _ index: Int) -> UnsafeBufferPointer<UInt8>? {
        index < 0 ? nil : r.value(at: index)
    }
}
