/// A statement prepared on one session: its server-side name, the parameter types the
/// server inferred (binding encodes for them) and the column table of its result.
struct PreparedStatement {
    let name: String
    let sql: String
    let parameterTypes: [UInt32]
    let columns: PostgresColumns
}

/// Parameters encoded in binary, laid out for `PQexecPrepared`: one buffer, with each
/// value's offset and length (-1 for NULL).
struct EncodedParameters {
    /// Starts with one spare byte, so an empty value still has a non-NULL address.
    var buffer: [UInt8] = [0]
    var offsets: [Int] = []
    var lengths: [Int32] = []

    init(_ values: [PostgresValue], types: [UInt32], sql: String) throws(PostgresError) {
        guard values.count == types.count else {
            throw .misuse("the statement takes \(types.count) parameters, \(values.count) given", sql: sql)
        }
        offsets.reserveCapacity(values.count)
        lengths.reserveCapacity(values.count)
        for (i, value) in values.enumerated() {
            offsets.append(buffer.count)
            if value.isNull {
                lengths.append(-1)
                continue
            }
            do {
                try PostgresBinary.encode(value, as: types[i], into: &buffer)
            } catch {
                throw .misuse("parameter $\(i + 1): \(error.message)", sql: sql)
            }
            guard let n = Int32(exactly: buffer.count - offsets[i]) else {
                throw .misuse("parameter $\(i + 1) is over 2 GiB", sql: sql)
            }
            lengths.append(n)
        }
    }

    /// Calls `body` with libpq's three parallel arrays (values, lengths, formats: all 1).
    func withArrays<R>(
        _ body: (UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?, UnsafePointer<Int32>?, Int32) -> R
    ) -> R {
        let formats = [Int32](repeating: 1, count: lengths.count)
        return buffer.withUnsafeBytes { raw in
            let base = raw.baseAddress!.assumingMemoryBound(to: CChar.self)
            let pointers: [UnsafePointer<CChar>?] = offsets.indices.map { lengths[$0] < 0 ? nil : base + offsets[$0] }
            return pointers.withUnsafeBufferPointer { p in
                lengths.withUnsafeBufferPointer { l in
                    formats.withUnsafeBufferPointer { f in body(p.baseAddress, l.baseAddress, f.baseAddress, Int32(lengths.count)) }
                }
            }
        }
    }
}
