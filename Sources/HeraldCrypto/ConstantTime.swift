import COpenSSL

/// True when `a` and `b` hold the same bytes, in time that depends only on their length
/// (`CRYPTO_memcmp`), for comparing secrets and their hashes. Arrays of different lengths
/// are unequal at once: only the length, never the content, decides how long this takes.
/// Any thread.
public func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    guard a.count == b.count else { return false }
    guard !a.isEmpty else { return true }
    return a.withUnsafeBytes { pa in
        b.withUnsafeBytes { pb in CRYPTO_memcmp(pa.baseAddress, pb.baseAddress, pa.count) == 0 }
    }
}
