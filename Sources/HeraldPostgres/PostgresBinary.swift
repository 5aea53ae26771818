/// PostgreSQL's binary wire format for the types of `PostgresValue` (network byte order;
/// timestamps are microseconds since 2000-01-01). Pure: no libpq, tested without a server.
enum PostgresBinary {
    /// Microseconds from 1970-01-01 to 2000-01-01, PostgreSQL's epoch.
    static let epochOffsetMicros: Int64 = 946_684_800_000_000

    /// A failure to encode or decode, with what was wrong (no SQL: the caller adds it).
    struct Failure: Error {
        let message: String
    }

    // MARK: Encoding

    /// Appends `value` encoded as type `oid` to `out` (the value's bytes only; the caller
    /// frames them with a length). `.null` is the caller's business and is refused here.
    static func encode(_ value: PostgresValue, as oid: UInt32, into out: inout [UInt8]) throws(Failure) {
        switch value {
        case .null:
            throw Failure(message: "NULL has no binary form")
        case .bool(let b) where oid == PostgresType.bool:
            out.append(b ? 1 : 0)
        case .int8(let v) where oid == PostgresType.int8:
            append(v, to: &out)
        case .int8(let v) where oid == PostgresType.int4 || oid == PostgresType.oid:
            guard let n = Int32(exactly: v) else { throw Failure(message: "\(v) does not fit int4") }
            append(n, to: &out)
        case .int8(let v) where oid == PostgresType.int2:
            guard let n = Int16(exactly: v) else { throw Failure(message: "\(v) does not fit int2") }
            append(n, to: &out)
        case .float8(let d) where oid == PostgresType.float8:
            append(d.bitPattern, to: &out)
        case .text(let s) where PostgresType.isText(oid):
            out.append(contentsOf: s.utf8)
        case .text(let s) where oid == PostgresType.jsonb:
            out.append(1)  // jsonb's binary format: a version byte, then the text
            out.append(contentsOf: s.utf8)
        case .bytea(let b) where oid == PostgresType.bytea:
            out.append(contentsOf: b)
        case .timestamp(let t) where oid == PostgresType.timestamptz || oid == PostgresType.timestamp:
            append(toWire(t), to: &out)
        case .array(let elements):
            guard let element = PostgresType.element(ofArray: oid) else {
                throw Failure(message: "an array does not bind to type OID \(oid)")
            }
            try encodeArray(elements, element: element, into: &out)
        default:
            throw Failure(message: "\(kindName(value)) does not bind to type OID \(oid)")
        }
    }

    /// The type a value has on its own (COPY, where the server states no types).
    static func naturalType(of value: PostgresValue) -> UInt32? {
        switch value {
        case .null: nil
        case .bool: PostgresType.bool
        case .int8: PostgresType.int8
        case .float8: PostgresType.float8
        case .text: PostgresType.text
        case .bytea: PostgresType.bytea
        case .timestamp: PostgresType.timestamptz
        case .array(let e): e.lazy.compactMap(naturalType).first.flatMap(PostgresType.array(of:))
        }
    }

    /// One dimension, lower bound 1: ndim, has-null flag, element OID, size, lower bound,
    /// then each element as a 4-byte length (-1 for NULL) and its bytes.
    static func encodeArray(_ elements: [PostgresValue], element: UInt32, into out: inout [UInt8]) throws(Failure) {
        let hasNull = elements.contains { $0.isNull }
        append(Int32(1), to: &out)
        append(Int32(hasNull ? 1 : 0), to: &out)
        append(element, to: &out)
        guard let count = Int32(exactly: elements.count) else { throw Failure(message: "the array is too long") }
        append(count, to: &out)
        append(Int32(1), to: &out)
        for e in elements {
            try appendField(e, as: element, to: &out)
        }
    }

    /// A 4-byte length (-1 for NULL) followed by the value: the framing of array elements
    /// and of COPY fields.
    static func appendField(_ value: PostgresValue, as oid: UInt32, to out: inout [UInt8]) throws(Failure) {
        if value.isNull {
            append(Int32(-1), to: &out)
            return
        }
        let at = out.count
        append(Int32(0), to: &out)
        try encode(value, as: oid, into: &out)
        guard let length = Int32(exactly: out.count - at - 4) else { throw Failure(message: "a value over 2 GiB") }
        withUnsafeBytes(of: length.bigEndian) { b in
            for i in 0..<4 { out[at + i] = b[i] }
        }
    }

    @inline(__always)
    static func append<T: FixedWidthInteger>(_ v: T, to out: inout [UInt8]) {
        withUnsafeBytes(of: v.bigEndian) { out.append(contentsOf: $0) }
    }

    static func toWire(_ unixMicros: Int64) -> Int64 {
        if unixMicros == .max || unixMicros == .min { return unixMicros }
        return unixMicros &- epochOffsetMicros
    }

    static func kindName(_ value: PostgresValue) -> String {
        switch value {
        case .null: "NULL"
        case .bool: "a bool"
        case .int8: "an integer"
        case .float8: "a float8"
        case .text: "text"
        case .bytea: "bytea"
        case .timestamp: "a timestamp"
        case .array: "an array"
        }
    }

    // MARK: Decoding

    /// The value of one non-NULL binary column of type `oid`, bounds-checked: a short or
    /// long value is a `Failure`, never a read past the buffer.
    static func decode(_ bytes: UnsafeRawBufferPointer, type oid: UInt32) throws(Failure) -> PostgresValue {
        switch oid {
        case PostgresType.bool:
            try expectLength(bytes, 1, "bool")
            return .bool(bytes[0] != 0)
        case PostgresType.int8:
            try expectLength(bytes, 8, "int8")
            return .int8(load(Int64.self, bytes))
        case PostgresType.int4:
            try expectLength(bytes, 4, "int4")
            return .int8(Int64(load(Int32.self, bytes)))
        case PostgresType.oid:
            try expectLength(bytes, 4, "oid")
            return .int8(Int64(load(UInt32.self, bytes)))
        case PostgresType.int2:
            try expectLength(bytes, 2, "int2")
            return .int8(Int64(load(Int16.self, bytes)))
        case PostgresType.float8:
            try expectLength(bytes, 8, "float8")
            return .float8(Double(bitPattern: load(UInt64.self, bytes)))
        case PostgresType.bytea:
            return .bytea(Array(bytes))
        case let t where PostgresType.isText(t):
            return .text(try utf8(bytes))
        case PostgresType.jsonb:
            guard bytes.count >= 1, bytes[0] == 1 else { throw Failure(message: "jsonb of an unknown version") }
            return .text(try utf8(UnsafeRawBufferPointer(rebasing: bytes[1...])))
        case PostgresType.timestamptz, PostgresType.timestamp:
            try expectLength(bytes, 8, "timestamp")
            let wire = load(Int64.self, bytes)
            if wire == .max || wire == .min { return .timestamp(wire) }
            return .timestamp(wire &+ epochOffsetMicros)
        case PostgresType.void:
            return .null
        default:
            throw Failure(message: "type OID \(oid) is not decoded here; cast it in the SQL (::text, ::int8)")
        }
    }

    static func expectLength(_ bytes: UnsafeRawBufferPointer, _ n: Int, _ type: String) throws(Failure) {
        guard bytes.count == n else { throw Failure(message: "\(type) of \(bytes.count) bytes, not \(n)") }
    }

    @inline(__always)
    static func load<T: FixedWidthInteger>(_: T.Type, _ bytes: UnsafeRawBufferPointer) -> T {
        T(bigEndian: bytes.loadUnaligned(as: T.self))
    }

    static func utf8(_ bytes: UnsafeRawBufferPointer) throws(Failure) -> String {
        guard let s = String(validating: bytes, as: UTF8.self) else { throw Failure(message: "text that is not UTF-8") }
        return s
    }
}
