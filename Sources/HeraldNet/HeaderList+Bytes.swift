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
        bytes.append(contentsOf: repeatElement(0, count: 36))
        bytes.withUnsafeMutableBufferPointer { field.write(to: $0.baseAddress! + Int(vs)) }
        entries.append(Entry(nameStart: ns, nameLen: vs - ns, valueStart: vs, valueLen: 36, noIndex: noIndex))
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
