import Glibc

/// A complete request received by an HTTP/2 server connection.
///
/// Its fields are kept as received in one byte buffer (`fields`, pseudo-headers included),
/// so a request costs no String per field and, on a reused stream, no allocation at all;
/// the String properties decode on demand (tests, cold paths), the `…Bytes` ones do not.
public struct HTTP2ServerRequest: Sendable {
    public var streamID: Int32
    /// Every field in arrival order, pseudo-headers (`:method`, `:path`, …) included.
    public internal(set) var fields = HeaderList()
    /// Indexes in `fields` of `:method`, `:path`, `:scheme`, `:authority` (-1: absent).
    var pseudo: (method: Int16, path: Int16, scheme: Int16, authority: Int16) = (-1, -1, -1, -1)
    /// Regular (non-pseudo) fields received.
    public internal(set) var regularCount = 0
    public var body: [UInt8] = []
    /// The body's full size (larger than `body.count` when truncated at the limit).
    public var bodySize = 0

    public init(streamID: Int32) { self.streamID = streamID }

    /// Back to an empty request for stream `id`, keeping the buffers when nothing else
    /// holds them (a reused stream object).
    mutating func reset(streamID id: Int32) {
        streamID = id
        fields.removeAll()
        pseudo = (-1, -1, -1, -1)
        regularCount = 0
        body.removeAll(keepingCapacity: true)
        bodySize = 0
    }

    /// Records a field from nghttp2 (a header callback). Up to 64 regular fields are kept.
    mutating func add(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        if name.count > 0 && name[0] == UInt8(ascii: ":") {
            let i = Int16(truncatingIfNeeded: fields.count)
            if Self.named(name, ":path") {
                pseudo.path = i
            } else if Self.named(name, ":method") {
                pseudo.method = i
            } else if Self.named(name, ":scheme") {
                pseudo.scheme = i
            } else if Self.named(name, ":authority") {
                pseudo.authority = i
            } else {
                return
            }
            fields.append(name: name, value: value)
        } else if regularCount < 64 {
            regularCount += 1
            fields.append(name: name, value: value)
        }
    }

    @inline(__always)
    static func named(_ b: UnsafeBufferPointer<UInt8>, _ s: StaticString) -> Bool {
        b.count == s.utf8CodeUnitCount && memcmp(b.baseAddress!, s.utf8Start, b.count) == 0
    }

    /// Calls `body` with each regular field's index in `fields` and its name's bytes (valid
    /// only inside `body`): one pass over the names, no slice or String per field.
    public func forEachRegularName(_ body: (Int, UnsafeBufferPointer<UInt8>) -> Void) {
        fields.bytes.withUnsafeBufferPointer { p in
            for (i, e) in fields.entries.enumerated() where !isPseudo(i) {
                body(i, UnsafeBufferPointer(rebasing: p[Int(e.nameStart)..<Int(e.nameStart + e.nameLen)]))
            }
        }
    }

    private func pseudoBytes(_ i: Int16) -> ArraySlice<UInt8> { i < 0 ? [] : fields.valueBytes(at: Int(i)) }
    private func pseudoString(_ i: Int16) -> String { String(decoding: pseudoBytes(i), as: UTF8.self) }

    public var method: String { pseudoString(pseudo.method) }
    public var path: String { pseudoString(pseudo.path) }
    public var scheme: String { pseudoString(pseudo.scheme) }
    public var authority: String { pseudoString(pseudo.authority) }
    /// `:method`'s bytes.
    public var methodBytes: ArraySlice<UInt8> { pseudoBytes(pseudo.method) }
    /// `:path`'s bytes.
    public var pathBytes: ArraySlice<UInt8> { pseudoBytes(pseudo.path) }

    /// Regular header fields in arrival order (duplicates kept, so they can be detected).
    public var headers: [(name: String, value: String)] {
        var out: [(name: String, value: String)] = []
        for i in 0..<fields.count where !isPseudo(i) { out.append(fields[i]) }
        return out
    }

    @inline(__always)
    private func isPseudo(_ i: Int) -> Bool {
        let i = Int16(truncatingIfNeeded: i)
        return i == pseudo.method || i == pseudo.path || i == pseudo.scheme || i == pseudo.authority
    }

    /// The first value of `name`.
    public func header(_ name: String) -> String? {
        for i in 0..<fields.count where !isPseudo(i) {
            let f = fields[i]
            if f.name == name { return f.value }
        }
        return nil
    }

    /// The bytes of the first value of the regular field `name` (no String made).
    public func value(_ name: StaticString) -> ArraySlice<UInt8>? {
        for i in 0..<fields.count where fields.name(at: i, is: name) && !isPseudo(i) { return fields.valueBytes(at: i) }
        return nil
    }

    /// How many times `name` occurs.
    public func count(of name: String) -> Int { headers.reduce(0) { $0 + ($1.name == name ? 1 : 0) } }

    /// True when a regular field name occurs twice (APNs answers DuplicateHeaders, reference
    /// §3.1). Pairwise over a handful of fields: cheaper than a set.
    public var hasDuplicateFields: Bool {
        let n = fields.count
        for i in 0..<n where !isPseudo(i) {
            for j in (i + 1)..<n where !isPseudo(j) && fields.sameName(i, j) { return true }
        }
        return false
    }
}
