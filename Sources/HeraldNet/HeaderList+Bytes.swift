import Glibc

/// Byte-level access to a `HeaderList`, for hot paths that must not make a String per
/// field (the simulator reads every request's fields this way; a response's fields are
/// built into a list reused per connection).
extension HeaderList {
    /// Empties the list, keeping its storage for the next fields (no allocation once warm).
    public mutating func removeAll() {
        bytes.removeAll(keepingCapacity: true)
        entries.removeAll(keepingCapacity: true)
    }

    /// Adds a field from raw bytes (nghttp2's callbacks, copied).
    mutating func append(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        let ns = Int32(bytes.count)
        bytes.append(contentsOf: name)
        let vs = Int32(bytes.count)
        bytes.append(contentsOf: value)
        entries.append(Entry(nameStart: ns, nameLen: vs - ns, valueStart: vs, valueLen: Int32(bytes.count) - vs, noIndex: false))
    }

    /// Adds a field whose value is `value`'s bytes (e.g. an id echoed from a request).
    public mutating func append(_ name: StaticString, bytes value: ArraySlice<UInt8>, noIndex: Bool = false) {
        value.withUnsafeBufferPointer { append(name, bytes: $0, noIndex: noIndex) }
    }

    /// Adds a field whose value is `value`'s bytes (borrowed, copied here).
    package mutating func append(_ name: StaticString, bytes value: UnsafeBufferPointer<UInt8>, noIndex: Bool = false) {
        let ns = Int32(bytes.count)
        bytes.append(contentsOf: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
        let vs = Int32(bytes.count)
        bytes.append(contentsOf: value)
        entries.append(Entry(nameStart: ns, nameLen: vs - ns, valueStart: vs, valueLen: Int32(bytes.count) - vs, noIndex: noIndex))
    }

    /// Adds a field whose value is the lower-case UUID of `high`/`low` (see `HTTP2UUIDField`),
    /// written straight into the list's buffer.
    public mutating func append(uuid field: HTTP2UUIDField, noIndex: Bool = true) {
        let ns = Int32(bytes.count)
        bytes.append(contentsOf: UnsafeBufferPointer(start: field.name.utf8Start, count: field.name.utf8CodeUnitCount))
        let vs = Int32(bytes.count)
        // Written on the stack, then one copy in (no element loop to make room first).
        var text: (UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &text) { t in
            field.write(to: t.baseAddress!.assumingMemoryBound(to: UInt8.self))
            bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: t[0..<36]))
        }
        entries.append(Entry(nameStart: ns, nameLen: vs - ns, valueStart: vs, valueLen: 36, noIndex: noIndex))
    }

    /// Fields `a` and `b` with 36-byte values (UUIDs) kept out of the HPACK table: a
    /// prebuilt answer whose values `setUUID`/`setValue` rewrite in place.
    public static func idFields(_ a: StaticString, _ b: StaticString) -> HeaderList {
        var l = HeaderList()
        l.append(uuid: HTTP2UUIDField(name: a, high: 0, low: 0))
        l.append(uuid: HTTP2UUIDField(name: b, high: 0, low: 0))
        return l
    }

    /// Rewrites the value of field `i`, which must be 36 bytes long, with a UUID's text.
    public mutating func setUUID(at i: Int, high: UInt64, low: UInt64) {
        let e = entries[i]
        precondition(e.valueLen == 36, "setUUID on a field that is not 36 bytes long")
        bytes.withUnsafeMutableBufferPointer {
            HTTP2UUIDField(name: "", high: high, low: low).write(to: $0.baseAddress! + Int(e.valueStart))
        }
    }

    /// Rewrites the value of field `i` with `value`, which must be as long as the old one.
    package mutating func setValue(at i: Int, bytes value: UnsafeBufferPointer<UInt8>) {
        let e = entries[i]
        precondition(Int(e.valueLen) == value.count, "setValue with a value of another length")
        guard let src = value.baseAddress, value.count > 0 else { return }
        bytes.withUnsafeMutableBufferPointer { (p: inout UnsafeMutableBufferPointer<UInt8>) in
            (p.baseAddress! + Int(e.valueStart)).update(from: src, count: value.count)
        }
    }

    /// The name of field `i`, as bytes of the list's buffer.
    public func nameBytes(at i: Int) -> ArraySlice<UInt8> {
        let e = entries[i]
        return bytes[Int(e.nameStart)..<Int(e.nameStart + e.nameLen)]
    }

    /// The value of field `i`, as bytes of the list's buffer.
    public func valueBytes(at i: Int) -> ArraySlice<UInt8> {
        let e = entries[i]
        return bytes[Int(e.valueStart)..<Int(e.valueStart + e.valueLen)]
    }

    /// True when field `i` is named `name` (compared without a String).
    @inline(__always)
    public func name(at i: Int, is name: StaticString) -> Bool {
        let e = entries[i]
        guard Int(e.nameLen) == name.utf8CodeUnitCount else { return false }
        guard e.nameLen > 0 else { return true }
        return bytes.withUnsafeBufferPointer { b in
            memcmp(b.baseAddress! + Int(e.nameStart), name.utf8Start, name.utf8CodeUnitCount) == 0
        }
    }

    /// True when fields `i` and `j` have the same name.
    public func sameName(_ i: Int, _ j: Int) -> Bool {
        let a = entries[i]
        let b = entries[j]
        guard a.nameLen == b.nameLen else { return false }
        guard a.nameLen > 0 else { return true }
        return bytes.withUnsafeBufferPointer { p in
            memcmp(p.baseAddress! + Int(a.nameStart), p.baseAddress! + Int(b.nameStart), Int(a.nameLen)) == 0
        }
    }
}

extension ArraySlice where Element == UInt8 {
    /// True when these are the bytes of `b` (memcmp, not an element loop).
    @inline(__always)
    public func bytesEqual(_ b: [UInt8]) -> Bool {
        guard count == b.count else { return false }
        guard !isEmpty else { return true }
        return withUnsafeBufferPointer { x in b.withUnsafeBufferPointer { y in memcmp(x.baseAddress!, y.baseAddress!, x.count) == 0 } }
    }

    /// True when these are the bytes of `b`.
    @inline(__always)
    public func bytesEqual(_ b: StaticString) -> Bool {
        guard count == b.utf8CodeUnitCount else { return false }
        guard !isEmpty else { return true }
        return withUnsafeBufferPointer { x in memcmp(x.baseAddress!, b.utf8Start, x.count) == 0 }
    }

    /// True when these bytes start with `prefix`'s.
    @inline(__always)
    public func bytesHavePrefix(_ prefix: StaticString) -> Bool {
        let n = prefix.utf8CodeUnitCount
        guard count >= n else { return false }
        guard n > 0 else { return true }
        return withUnsafeBufferPointer { x in memcmp(x.baseAddress!, prefix.utf8Start, n) == 0 }
    }

    /// True when these bytes end with `suffix`'s.
    @inline(__always)
    public func bytesHaveSuffix(_ suffix: StaticString) -> Bool {
        let n = suffix.utf8CodeUnitCount
        guard count >= n else { return false }
        guard n > 0 else { return true }
        return withUnsafeBufferPointer { x in memcmp(x.baseAddress! + (x.count - n), suffix.utf8Start, n) == 0 }
    }
}
