import COpenSSL

/// A memory BIO owned by Swift (freed in deinit), for PEM in and out. Confined to the
/// calling thread for its short life.
final class MemoryBIO {
    let bio: OpaquePointer

    /// An empty BIO to write into.
    init() throws(OpenSSLError) {
        bio = try checkOpenSSL(BIO_new(BIO_s_mem()), "BIO_new")
    }

    deinit { BIO_free(bio) }

    /// Runs `body` with a read-only BIO over `text`. `BIO_new_mem_buf` does not copy, so the
    /// BIO must not outlive the bytes: it lives only inside this call.
    static func reading<R>(_ text: String, _ body: (OpaquePointer) throws -> R) throws -> R {
        var bytes = Array(text.utf8)
        bytes.append(0)  // never an empty buffer; the length below excludes the NUL
        return try bytes.withUnsafeBytes { raw in
            guard raw.count - 1 <= Int(Int32.max) else {
                throw CryptoError(.invalidArgument, "the PEM text is too large")
            }
            let bio = try checkOpenSSL(BIO_new_mem_buf(raw.baseAddress, Int32(raw.count - 1)), "BIO_new_mem_buf")
            defer { BIO_free(bio) }
            return try body(bio)
        }
    }

    /// Everything written so far, as text (PEM is ASCII).
    func text() -> String {
        var data: UnsafeMutablePointer<CChar>? = nil
        let length = herald_BIO_get_mem_data(bio, &data)
        guard length > 0, let data else { return "" }
        return data.withMemoryRebound(to: UInt8.self, capacity: length) { p in
            String(decoding: UnsafeBufferPointer(start: p, count: length), as: UTF8.self)
        }
    }
}

/// A PEM password callback that refuses: an encrypted key fails to load instead of OpenSSL
/// prompting on the terminal.
let refusePassword: @convention(c) (UnsafeMutablePointer<CChar>?, Int32, Int32, UnsafeMutableRawPointer?) -> Int32 = {
    _, _, _, _ in -1
}

/// Runs `body` with the bytes of `data` in contiguous memory whose base address is never nil
/// (some OpenSSL entry points reject NULL even with a zero length).
func withContiguousBytes<R>(
    _ data: some Collection<UInt8>, _ body: (UnsafePointer<UInt8>, Int) throws -> R
) rethrows -> R {
    func call(_ buffer: UnsafeBufferPointer<UInt8>) throws -> R {
        if let base = buffer.baseAddress { return try body(base, buffer.count) }
        var zero: UInt8 = 0
        return try withUnsafePointer(to: &zero) { try body($0, 0) }
    }
    if let result = try data.withContiguousStorageIfAvailable(call) { return result }
    return try Array(data).withUnsafeBufferPointer(call)
}
