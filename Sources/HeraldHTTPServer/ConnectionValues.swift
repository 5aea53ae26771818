import CMicroHTTPD

/// Reads what libmicrohttpd parsed from a connection: headers, query arguments, peer.
enum ConnectionValues {
    /// Header names lower-cased; repeated headers joined with ", " in arrival order.
    static func headers(_ connection: OpaquePointer) -> [String: String] {
        var out: [String: String] = [:]
        withUnsafeMutablePointer(to: &out) { p in
            _ = MHD_get_connection_values_n(connection, .HEADER_KIND, collectHeader, UnsafeMutableRawPointer(p))
        }
        return out
    }

    /// Query arguments as libmicrohttpd decoded them; the first value of a repeated key wins.
    static func query(_ connection: OpaquePointer) -> [String: String] {
        var out: [String: String] = [:]
        withUnsafeMutablePointer(to: &out) { p in
            _ = MHD_get_connection_values_n(
                connection, .GET_ARGUMENT_KIND, collectArgument, UnsafeMutableRawPointer(p))
        }
        return out
    }

    /// One header value (any case of `name`), or nil.
    static func header(_ connection: OpaquePointer, _ name: String) -> String? {
        guard let v = MHD_lookup_connection_value(connection, .HEADER_KIND, name) else { return nil }
        return String(cString: v)
    }

    /// The peer's numeric IP address, or "" when unknown.
    static func remoteAddress(_ connection: OpaquePointer) -> String {
        guard let sa = herald_mhd_client_address(connection) else { return "" }
        return ListenAddress.numericHost(sa) ?? ""
    }

    static func string(_ p: UnsafePointer<CChar>?, _ count: Int) -> String {
        guard let p else { return "" }
        return p.withMemoryRebound(to: UInt8.self, capacity: count) {
            String(decoding: UnsafeBufferPointer(start: $0, count: count), as: UTF8.self)
        }
    }
}

private func collectHeader(
    _ cls: UnsafeMutableRawPointer?, _ kind: MHD_ValueKind, _ key: UnsafePointer<CChar>?, _ keySize: Int,
    _ value: UnsafePointer<CChar>?, _ valueSize: Int
) -> MHD_Result {
    let out = cls!.assumingMemoryBound(to: [String: String].self)
    let name = ConnectionValues.string(key, keySize).lowercased()
    let v = ConnectionValues.string(value, valueSize)
    if let existing = out.pointee[name] {
        out.pointee[name] = existing + ", " + v
    } else {
        out.pointee[name] = v
    }
    return .YES
}

private func collectArgument(
    _ cls: UnsafeMutableRawPointer?, _ kind: MHD_ValueKind, _ key: UnsafePointer<CChar>?, _ keySize: Int,
    _ value: UnsafePointer<CChar>?, _ valueSize: Int
) -> MHD_Result {
    let out = cls!.assumingMemoryBound(to: [String: String].self)
    let name = ConnectionValues.string(key, keySize)
    if out.pointee[name] == nil { out.pointee[name] = ConnectionValues.string(value, valueSize) }
    return .YES
}
