import Glibc

/// A complete request received by an HTTP/2 server connection.
///
/// Its fields are kept as received in one raw byte buffer (pseudo-headers included), each
/// copied once with `memcpy` from nghttp2's callback: a request costs no String and no
/// array growth per field and, on a reused stream, no allocation at all. The hot path
/// reads them in place (`withFieldBytes`); the String properties and `fields` decode or
/// copy on demand (tests, cold paths).
public struct HTTP2ServerRequest: Sendable {
    public var streamID: Int32

    /// Everything but the stream id, behind one reference: handing a request over (an
    /// event, a delegate call) retains one object. Copy-on-write: a mutation of a shared
    /// storage copies it first, so requests keep value semantics.
    @usableFromInline final class Storage: @unchecked Sendable {  // mutated only when uniquely referenced
        /// Fields kept at most: the four pseudo-headers read and 64 regular fields.
        static let maxFields = 68
        var bytes: UnsafeMutablePointer<UInt8>
        var capacity: Int
        var used = 0
        let entries: UnsafeMutablePointer<HeaderList.Entry>
        var count = 0
        var pseudo: (method: Int16, path: Int16, scheme: Int16, authority: Int16) = (-1, -1, -1, -1)
        var regularCount = 0
        var body: [UInt8] = []
        var bodySize = 0

        /// Room for a typical APNs request's fields (~400 bytes) from the start, so a new
        /// stream's first request does not grow its buffer several times.
        init(capacity: Int = 512) {
            self.capacity = capacity
            bytes = .allocate(capacity: capacity)
            entries = .allocate(capacity: Self.maxFields)
        }

        convenience init(copying o: Storage) {
            self.init(capacity: max(o.capacity, 1))
            if o.used > 0 { bytes.update(from: o.bytes, count: o.used) }
            used = o.used
            entries.update(from: o.entries, count: o.count)
            count = o.count
            pseudo = o.pseudo
            regularCount = o.regularCount
            body = o.body
            bodySize = o.bodySize
        }

        deinit {
            bytes.deallocate()
            entries.deallocate()
        }

        /// Copies a field in (dropped beyond `maxFields`; callers count regular fields).
        @inline(__always)
        func append(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
            guard count < Self.maxFields else { return }
            let n = name.count + value.count
            if used + n > capacity { grow(used + n) }
            let ns = used
            if let p = name.baseAddress { bytesCopy(bytes + ns, p, name.count) }
            let vs = ns + name.count
            if let p = value.baseAddress { bytesCopy(bytes + vs, p, value.count) }
            used = vs + value.count
            entries[count] = HeaderList.Entry(
                nameStart: Int32(truncatingIfNeeded: ns), nameLen: Int32(truncatingIfNeeded: name.count),
                valueStart: Int32(truncatingIfNeeded: vs), valueLen: Int32(truncatingIfNeeded: value.count), noIndex: false)
            count += 1
        }

        private func grow(_ needed: Int) {
            var c = capacity * 2
            while c < needed { c *= 2 }
            let b = UnsafeMutablePointer<UInt8>.allocate(capacity: c)
            if used > 0 { b.update(from: bytes, count: used) }
            bytes.deallocate()
            bytes = b
            capacity = c
        }

        func clear() {
            used = 0
            count = 0
            pseudo = (-1, -1, -1, -1)
            regularCount = 0
            body.removeAll(keepingCapacity: true)
            bodySize = 0
        }

        @usableFromInline var view: FieldBytes {
            FieldBytes(base: UnsafePointer(bytes), entries: UnsafePointer(entries), count: count, pseudo: pseudo)
        }
    }

    @usableFromInline var storage = Storage()

    /// Makes the storage this request's own before a mutation.
    @inline(__always)
    private mutating func makeUnique() {
        if !isKnownUniquelyReferenced(&storage) { storage = Storage(copying: storage) }
    }

    /// The fields' bytes in place, for reading without a copy, a String or a retain per
    /// field. The view and every buffer it gives are valid only inside `body`.
    /// Inlinable: the simulator reads every field of every request through it.
    @usableFromInline package struct FieldBytes {
        @usableFromInline let base: UnsafePointer<UInt8>
        @usableFromInline let entries: UnsafePointer<HeaderList.Entry>
        /// Fields kept, pseudo-headers included.
        @usableFromInline package let count: Int
        @usableFromInline let pseudo: (method: Int16, path: Int16, scheme: Int16, authority: Int16)

        /// The name of field `i` (`0..<count`).
        @inlinable @inline(__always)
        package func name(at i: Int) -> UnsafeBufferPointer<UInt8> {
            let e = entries[i]
            return UnsafeBufferPointer(start: base + Int(e.nameStart), count: Int(e.nameLen))
        }

        /// The value of field `i` (`0..<count`).
        @inlinable @inline(__always)
        package func value(at i: Int) -> UnsafeBufferPointer<UInt8> {
            let e = entries[i]
            return UnsafeBufferPointer(start: base + Int(e.valueStart), count: Int(e.valueLen))
        }

        /// True for the pseudo-headers (`:method`, `:path`, `:scheme`, `:authority`).
        @inlinable @inline(__always)
        package func isPseudo(_ i: Int) -> Bool {
            let i = Int16(truncatingIfNeeded: i)
            return i == pseudo.method || i == pseudo.path || i == pseudo.scheme || i == pseudo.authority
        }

        /// True when fields `i` and `j` have the same name.
        @inlinable @inline(__always)
        package func sameName(_ i: Int, _ j: Int) -> Bool {
            let a = entries[i]
            let b = entries[j]
            guard a.nameLen == b.nameLen else { return false }
            return a.nameLen == 0 || memcmp(base + Int(a.nameStart), base + Int(b.nameStart), Int(a.nameLen)) == 0
        }

        @inlinable @inline(__always) @usableFromInline
        func pseudoValue(_ i: Int16) -> UnsafeBufferPointer<UInt8> {
            i < 0 ? UnsafeBufferPointer(start: base, count: 0) : value(at: Int(i))
        }

        /// `:path`'s bytes (empty when absent).
        @inlinable package var path: UnsafeBufferPointer<UInt8> { pseudoValue(pseudo.path) }
        /// `:method`'s bytes (empty when absent).
        @inlinable package var method: UnsafeBufferPointer<UInt8> { pseudoValue(pseudo.method) }

        /// Calls `body` with each regular field's index and name, in arrival order.
        @inlinable @inline(__always)
        package func forEachRegularName(_ body: (Int, UnsafeBufferPointer<UInt8>) -> Void) {
            for i in 0..<count where !isPseudo(i) { body(i, name(at: i)) }
        }
    }

    /// Runs `body` with the fields' bytes in place (see `FieldBytes`).
    @inlinable @inline(__always)
    package func withFieldBytes<R>(_ body: (FieldBytes) throws -> R) rethrows -> R {
        let s = storage
        return try withExtendedLifetime(s) { try body(s.view) }
    }

    /// Every field in arrival order, pseudo-headers (`:method`, `:path`, …) included (a copy).
    public var fields: HeaderList {
        let s = storage
        var l = HeaderList()
        l.bytes = Array(UnsafeBufferPointer(start: s.bytes, count: s.used))
        l.entries = Array(UnsafeBufferPointer(start: s.entries, count: s.count))
        return l
    }
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
        storage.clear()
    }

    /// Appends received body bytes, keeping at most `limit` of them (the size still counts all).
    mutating func appendBody(_ chunk: UnsafeBufferPointer<UInt8>, limit: Int) {
        makeUnique()
        storage.bodySize += chunk.count
        let room = limit - storage.body.count
        // As a buffer, not a slice: Array's contiguous append (one copy), not its generic one.
        if room > 0 { storage.body.append(contentsOf: UnsafeBufferPointer(rebasing: chunk.prefix(room))) }
    }

    /// Records a field from nghttp2 (a header callback). Up to 64 regular fields are kept.
    /// The callbacks add fields only between the stream's `reset` (which left the storage
    /// unique) and the request's hand-over, so no uniqueness check is paid per field
    /// outside debug builds; a request built by hand (tests) is unique too.
    mutating func add(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        add(Self.kind(of: name), name: name, value: value)
    }

    /// What `name` is, told from its bytes (`HTTP2RequestCheck.field` tells it while it
    /// checks the field; this is for a session that leaves the checks to nghttp2).
    static func kind(of name: UnsafeBufferPointer<UInt8>) -> HTTP2FieldKind {
        guard name.count > 0 && name[0] == UInt8(ascii: ":") else { return .regular }
        if name.bytesEqual(":path") { return .path }
        if name.bytesEqual(":method") { return .method }
        if name.bytesEqual(":scheme") { return .scheme }
        if name.bytesEqual(":authority") { return .authority }
        return .ignored
    }

    /// Records a field already told apart (`kind`): a pseudo-header the request reads, or
    /// a regular field; anything else is not kept.
    @inline(__always)
    mutating func add(_ kind: HTTP2FieldKind, name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        assert(isKnownUniquelyReferenced(&storage), "a field added to a request already handed over")
        let s = storage
        let i = Int16(truncatingIfNeeded: s.count)
        switch kind {
        case .regular:
            guard s.regularCount < 64 else { return }
            s.regularCount += 1
        case .path: s.pseudo.path = i
        case .method: s.pseudo.method = i
        case .scheme: s.pseudo.scheme = i
        case .authority: s.pseudo.authority = i
        case .ignored, .malformed: return
        }
        s.append(name: name, value: value)
    }

    /// Calls `body` with each regular field's index in `fields` and its name's bytes (valid
    /// only inside `body`): one pass over the names, no slice or String per field.
    package func forEachRegularName(_ body: (Int, UnsafeBufferPointer<UInt8>) -> Void) {
        withFieldBytes { $0.forEachRegularName(body) }
    }

    private func pseudoBytes(_ i: Int16) -> ArraySlice<UInt8> {
        withFieldBytes { ArraySlice($0.pseudoValue(i)) }
    }
    private func pseudoString(_ i: Int16) -> String { withFieldBytes { String(decoding: $0.pseudoValue(i), as: UTF8.self) } }

    public var method: String { pseudoString(pseudo.method) }
    public var path: String { pseudoString(pseudo.path) }
    public var scheme: String { pseudoString(pseudo.scheme) }
    public var authority: String { pseudoString(pseudo.authority) }
    /// `:method`'s bytes (a copy; `withFieldBytes` reads them in place).
    public var methodBytes: ArraySlice<UInt8> { pseudoBytes(pseudo.method) }
    /// `:path`'s bytes (a copy; `withFieldBytes` reads them in place).
    public var pathBytes: ArraySlice<UInt8> { pseudoBytes(pseudo.path) }

    /// Regular header fields in arrival order (duplicates kept, so they can be detected).
    public var headers: [(name: String, value: String)] {
        withFieldBytes { b in
            var out: [(name: String, value: String)] = []
            for i in 0..<b.count where !b.isPseudo(i) {
                out.append((String(decoding: b.name(at: i), as: UTF8.self), String(decoding: b.value(at: i), as: UTF8.self)))
            }
            return out
        }
    }

    /// The first value of `name`.
    public func header(_ name: String) -> String? {
        var name = name
        return name.withUTF8 { n in
            withFieldBytes { b in
                for i in 0..<b.count where !b.isPseudo(i) {
                    let f = b.name(at: i)
                    if f.count == n.count && (n.isEmpty || memcmp(f.baseAddress!, n.baseAddress!, n.count) == 0) {
                        return String(decoding: b.value(at: i), as: UTF8.self)
                    }
                }
                return nil
            }
        }
    }

    /// The bytes of the first value of the regular field `name` (a copy).
    public func value(_ name: StaticString) -> ArraySlice<UInt8>? {
        withFieldBytes { b in
            for i in 0..<b.count where !b.isPseudo(i) && b.name(at: i).bytesEqual(name) { return ArraySlice(b.value(at: i)) }
            return nil
        }
    }

    /// How many times `name` occurs.
    public func count(of name: String) -> Int { headers.reduce(0) { $0 + ($1.name == name ? 1 : 0) } }

    /// True when fields `i` and `j` (indexes in `fields`) have the same name.
    public func sameName(_ i: Int, _ j: Int) -> Bool { withFieldBytes { $0.sameName(i, j) } }

    /// True when a regular field name occurs twice (APNs answers DuplicateHeaders, reference
    /// §3.1). Pairwise over a handful of fields: cheaper than a set.
    public var hasDuplicateFields: Bool {
        withFieldBytes { b in
            let n = b.count
            for i in 0..<n where !b.isPseudo(i) {
                for j in (i + 1)..<n where !b.isPseudo(j) && b.sameName(i, j) { return true }
            }
            return false
        }
    }
}
