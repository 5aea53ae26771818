import CNghttp2
import CSystem
import Glibc

/// HTTP/2 header fields packed in one byte buffer, so building a request costs one or two
/// allocations instead of one per field. Names must be lower case (RFC 9113 §8.2).
public struct HeaderList: Sendable {
    public struct Entry: Sendable {
        // @usableFromInline: read by the server request's inlinable field view.
        @usableFromInline var nameStart: Int32
        @usableFromInline var nameLen: Int32
        @usableFromInline var valueStart: Int32
        @usableFromInline var valueLen: Int32
        var noIndex: Bool
    }

    var bytes: [UInt8] = []
    var entries: [Entry] = []

    public init() {}

    public init(_ fields: [(String, String)]) {
        for (n, v) in fields { append(n, v) }
    }

    /// Adds a field. `noIndex` keeps per-request values (`:path` with a token, `apns-id`)
    /// out of the HPACK dynamic table (reference §1.4).
    public mutating func append(_ name: String, _ value: String, noIndex: Bool = false) {
        let ns = Int32(bytes.count)
        bytes.append(contentsOf: name.utf8)
        let vs = Int32(bytes.count)
        bytes.append(contentsOf: value.utf8)
        entries.append(Entry(nameStart: ns, nameLen: vs - ns, valueStart: vs, valueLen: Int32(bytes.count) - vs, noIndex: noIndex))
    }

    /// Appends every field of `other`.
    public mutating func append(contentsOf other: HeaderList) {
        let base = Int32(bytes.count)
        bytes.append(contentsOf: other.bytes)
        for var e in other.entries {
            e.nameStart += base
            e.valueStart += base
            entries.append(e)
        }
    }

    public var count: Int { entries.count }

    public subscript(i: Int) -> (name: String, value: String) {
        let e = entries[i]
        return (
            String(decoding: bytes[Int(e.nameStart)..<Int(e.nameStart + e.nameLen)], as: UTF8.self),
            String(decoding: bytes[Int(e.valueStart)..<Int(e.valueStart + e.valueLen)], as: UTF8.self)
        )
    }

    /// The first value of `name`.
    public func value(_ name: String) -> String? {
        for i in 0..<count where self[i].name == name { return self[i].value }
        return nil
    }

    /// Calls `body` with nghttp2 name/value pairs pointing into this list (valid only
    /// inside `body`; nghttp2 copies them on submit).
    func withNV<T>(prefix: HeaderList? = nil, _ body: (UnsafeBufferPointer<nghttp2_nv>) -> T) -> T {
        var all = prefix ?? HeaderList()
        if prefix != nil { all.append(contentsOf: self) } else { all = self }
        return all.bytes.withUnsafeBufferPointer { raw in
            let base = UnsafeMutablePointer(mutating: raw.baseAddress ?? UnsafePointer(bitPattern: 1)!)
            var nva = [nghttp2_nv]()
            nva.reserveCapacity(all.entries.count)
            for e in all.entries {
                nva.append(
                    nghttp2_nv(
                        name: base + Int(e.nameStart), value: base + Int(e.valueStart), namelen: Int(e.nameLen),
                        valuelen: Int(e.valueLen),
                        flags: e.noIndex ? UInt8(NGHTTP2_NV_FLAG_NO_INDEX.rawValue) : UInt8(NGHTTP2_NV_FLAG_NONE.rawValue)))
            }
            return nva.withUnsafeBufferPointer(body)
        }
    }
}

/// An immutable request or response body shared by every stream that sends it (a payload
/// is encoded once per event, style + issue #2).
public final class HTTP2Body: Sendable {
    public let bytes: [UInt8]
    public init(_ bytes: [UInt8]) { self.bytes = bytes }
    public var count: Int { bytes.count }
}
