import Glibc

/// Byte comparisons on borrowed buffers (a request's fields read in place, see
/// `HTTP2ServerRequest.withFieldBytes`), the same as `ArraySlice`'s in `HeaderList+Bytes.swift`.
extension UnsafeBufferPointer where Element == UInt8 {
    /// True when these are the bytes of `b`.
    @inlinable @inline(__always)
    package func bytesEqual(_ b: StaticString) -> Bool {
        count == b.utf8CodeUnitCount && (isEmpty || memcmp(baseAddress!, b.utf8Start, count) == 0)
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
        return count >= n && (n == 0 || memcmp(baseAddress!, prefix.utf8Start, n) == 0)
    }

    /// True when these bytes end with `suffix`'s.
    @inlinable @inline(__always)
    package func bytesHaveSuffix(_ suffix: StaticString) -> Bool {
        let n = suffix.utf8CodeUnitCount
        return count >= n && (n == 0 || memcmp(baseAddress! + (count - n), suffix.utf8Start, n) == 0)
    }

    /// The bytes after the first `n` (none when there are fewer).
    @inlinable @inline(__always)
    package func dropping(_ n: Int) -> UnsafeBufferPointer<UInt8> {
        let k = Swift.min(n, count)
        return UnsafeBufferPointer(start: baseAddress.map { $0 + k }, count: count - k)
    }
}
