import Glibc

/// A complete request received by an HTTP/2 server connection.
///
/// Its fields are kept as received in one byte buffer (`fields`, pseudo-headers included),
/// so a request costs no String per field and, on a reused stream, no allocation at all;
/// the String properties decode on demand (tests, cold paths), the `…Bytes` ones do not.
public struct HTTP2ServerRequest: Sendable {
    public var streamID: Int32

    /// Everything but the stream id, behind one reference: handing a request over (an
    /// event, a delegate call) retains one object, not three arrays. Copy-on-write: a
    /// mutation of a shared storage copies it first, so requests keep value semantics.
    final class Storage: @unchecked Sendable {  // mutated only when uniquely referenced
        var fields = HeaderList()
        var pseudo: (method: Int16, path: Int16, scheme: Int16, authority: Int16) = (-1, -1, -1, -1)
        var regularCount = 0
        var body: [UInt8] = []
        var bodySize = 0

        init() {}

        init(copying o: Storage) {
            fields = o.fields
            pseudo = o.pseudo
            regularCount = o.regularCount
            body = o.body
            bodySize = o.bodySize
        }
    }

    private var storage = Storage()

    /// Makes the storage this request's own before a mutation.
    @inline(__always)
    private mutating func makeUnique() {
        if !isKnownUniquelyReferenced(&storage) { storage = Storage(copying: storage) }
    }

    /// Every field in arrival order, pseudo-headers (`:method`, `:path`, …) included.
    public var fields: HeaderList { _read { yield storage.fields } }
    /// Indexes in `fields` of `:method`, `:path`, `:scheme`, `:authority` (-1: absent).
    var pseudo: (method: Int16, path: Int16, scheme: Int16, authority: Int16) { storage.pseudo }
    /// Regular (non-pseudo) fields received.
    public var regularCount: Int { storage.regularCount }
    public var body: [UInt8] {
        _read { yield storage.body }
        set {
            makeUnique()
            storage.body = newValue
        }
    }
    /// The body's full size (larger than `body.count` when truncated at the limit).
    public var bodySize: Int {
        get { storage.bodySize }
        set {
            makeUnique()
            storage.bodySize = newValue
        }
    }

    public init(streamID: Int32) { self.streamID = streamID }

    /// Back to an empty request for stream `id`, keeping the buffers when nothing else
    /// holds them (a reused stream object).
    mutating func reset(streamID id: Int32) {
        streamID = id
        guard isKnownUniquelyReferenced(&storage) else {
            storage = Storage()
            return
        }
        storage.fields.removeAll()
        storage.pseudo = (-1, -1, -1, -1)
        storage.regularCount = 0
        storage.body.removeAll(keepingCapacity: true)
        storage.bodySize = 0
    }

    /// Appends received body bytes, keeping at most `limit` of them (the size still counts all).
    mutating func appendBody(_ chunk: UnsafeBufferPointer<UInt8>, limit: Int) {
        makeUnique()
        storage.bodySize += chunk.count
        let room = limit - storage.body.count
        if room > 0 { storage.body.append(contentsOf: chunk.prefix(room)) }
    }

    /// Records a field from nghttp2 (a header callback). Up to 64 regular fields are kept.
    mutating func add(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        makeUnique()
        let s = storage
        if name.count > 0 && name[0] == UInt8(ascii: ":") {
            let i = Int16(truncatingIfNeeded: s.fields.count)
            if Self.named(name, ":path") {
                s.pseudo.path = i
            } else if Self.named(name, ":method") {
                s.pseudo.method = i
            } else if Self.named(name, ":scheme") {
                s.pseudo.scheme = i
            } else if Self.named(name, ":authority") {
                s.pseudo.authority = i
            } else {
                return
            }
            s.fields.append(name: name, value: value)
        } else if s.regularCount < 64 {
            s.regularCount += 1
            s.fields.append(name: name, value: value)
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
