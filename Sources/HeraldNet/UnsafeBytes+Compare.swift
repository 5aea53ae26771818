import Glibc

/// True when the `n` bytes at `a` and `b` are equal. Up to 16 bytes (a field name, a short
/// value) it compares one or two words each side, overlapping, inline: no call into libc's
/// `memcmp` for the few bytes a request's names are.
@inlinable @inline(__always)
package func bytesMatch(_ a: UnsafeRawPointer, _ b: UnsafeRawPointer, _ n: Int) -> Bool {
    switch n {
    case 0:
        return true
    case 1...3:
        for i in 0..<n where a.load(fromByteOffset: i, as: UInt8.self) != b.load(fromByteOffset: i, as: UInt8.self) { return false }
        return true
    case 4...7:
        return a.loadUnaligned(as: UInt32.self) == b.loadUnaligned(as: UInt32.self)
            && a.loadUnaligned(fromByteOffset: n - 4, as: UInt32.self) == b.loadUnaligned(fromByteOffset: n - 4, as: UInt32.self)
    case 8...16:
        return a.loadUnaligned(as: UInt64.self) == b.loadUnaligned(as: UInt64.self)
            && a.loadUnaligned(fromByteOffset: n - 8, as: UInt64.self) == b.loadUnaligned(fromByteOffset: n - 8, as: UInt64.self)
    default:
        return memcmp(a, b, n) == 0
    }
}

/// Copies `n` bytes from `src` to `dst` (not overlapping). Up to 16 bytes (a field name) with
/// one or two word loads and stores, overlapping, inline; `memcpy` beyond.
@inlinable @inline(__always)
package func bytesCopy(_ dst: UnsafeMutableRawPointer, _ src: UnsafeRawPointer, _ n: Int) {
    switch n {
    case 0:
        return
    case 1...3:
        for i in 0..<n { dst.storeBytes(of: src.load(fromByteOffset: i, as: UInt8.self), toByteOffset: i, as: UInt8.self) }
    case 4...7:
        let a = src.loadUnaligned(as: UInt32.self)
        let b = src.loadUnaligned(fromByteOffset: n - 4, as: UInt32.self)
        dst.storeBytes(of: a, as: UInt32.self)
        dst.storeBytes(of: b, toByteOffset: n - 4, as: UInt32.self)
    case 8...16:
        let a = src.loadUnaligned(as: UInt64.self)
        let b = src.loadUnaligned(fromByteOffset: n - 8, as: UInt64.self)
        dst.storeBytes(of: a, as: UInt64.self)
        dst.storeBytes(of: b, toByteOffset: n - 8, as: UInt64.self)
    default:
        memcpy(dst, src, n)
    }
}

/// Byte comparisons on borrowed buffers (a request's fields read in place, see
/// `HTTP2ServerRequest.withFieldBytes`), the same as `ArraySlice`'s in `HeaderList+Bytes.swift`.
extension UnsafeBufferPointer where Element == UInt8 {
    /// True when these are the bytes of `b`.
    @inlinable @inline(__always)
    package func bytesEqual(_ b: StaticString) -> Bool {
        count == b.utf8CodeUnitCount && (isEmpty || bytesMatch(baseAddress!, b.utf8Start, count))
    }

    /// True when these are the bytes of `b`.
    @inlinable @inline(__always)
    package func bytesEqual(_ b: [UInt8]) -> Bool {
        guard count == b.count else { return false }
        guard !isEmpty else { return true }
        return b.withUnsafeBufferPointer { memcmp(baseAddress!, $0.baseAddress!, count) == 0 }
    }

    /// True when these bytes start with `prefix`'s.
    @inlinable @inline(__always)
    package func bytesHavePrefix(_ prefix: StaticString) -> Bool {
        let n = prefix.utf8CodeUnitCount
        return count >= n && (n == 0 || bytesMatch(baseAddress!, prefix.utf8Start, n))
    }

    /// True when these bytes end with `suffix`'s.
    @inlinable @inline(__always)
    package func bytesHaveSuffix(_ suffix: StaticString) -> Bool {
        let n = suffix.utf8CodeUnitCount
        return count >= n && (n == 0 || bytesMatch(baseAddress! + (count - n), suffix.utf8Start, n))
    }

    /// The bytes after the first `n` (none when there are fewer).
    @inlinable @inline(__always)
    package func dropping(_ n: Int) -> UnsafeBufferPointer<UInt8> {
        let k = Swift.min(n, count)
        return UnsafeBufferPointer(start: baseAddress.map { $0 + k }, count: count - k)
    }
}
