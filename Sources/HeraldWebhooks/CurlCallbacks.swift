import CCurl
import Glibc

// libcurl's callbacks for `WebhookPoster`. They recover the post's context from the user
// pointer, never throw or block, and answer libcurl's way on failure.

/// The response body: counted and discarded past `maxBytes` (the status is what matters).
let curlWrite: curl_write_callback = { _, size, count, user in
    let ctx = Unmanaged<PostContext>.fromOpaque(user!).takeUnretainedValue()
    ctx.received += size * count
    return size * count
}

/// Response header lines: keeps `Retry-After` (delta seconds; an HTTP date is ignored).
let curlHeader: curl_write_callback = { data, size, count, user in
    let ctx = Unmanaged<PostContext>.fromOpaque(user!).takeUnretainedValue()
    let n = size * count
    guard let data, n > 12, n < 256 else { return n }
    let line = String(decoding: UnsafeRawBufferPointer(start: data, count: n), as: UTF8.self)
    if line.lowercased().hasPrefix("retry-after:") {
        let value = line.dropFirst("retry-after:".count).trimmingCharacters(in: .whitespacesAndNewlines)
        if let s = Double(value), s.isFinite, s >= 0 { ctx.retryAfter = s }
    }
    return n
}

/// Opens the socket for each address libcurl tries, after the SSRF guard: an address the
/// policy forbids gets no socket (libcurl then tries the next, or fails the post).
let curlOpenSocket: curl_opensocket_callback = { user, _, address in
    let ctx = Unmanaged<PostContext>.fromOpaque(user!).takeUnretainedValue()
    guard let address else { return herald_curl_socket_bad() }
    let family = address.pointee.family
    let type = address.pointee.socktype
    let proto = address.pointee.protocol
    let raw = UnsafeMutableRawPointer(address) + MemoryLayout<curl_sockaddr>.offset(of: \curl_sockaddr.addr)!
    let sa = raw.assumingMemoryBound(to: sockaddr.self)
    let found = AddressClass.of(sa)
    guard let (cls, _) = found, ctx.policy.permits(cls) else {
        ctx.refused = "\(found?.1 ?? "an address of family \(family)") is not a permitted webhook destination"
        return herald_curl_socket_bad()
    }
    return socket(family, type | Int32(SOCK_CLOEXEC.rawValue), proto)
}
