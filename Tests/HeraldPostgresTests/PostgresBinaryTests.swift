import Testing

@testable import HeraldPostgres

/// The wire format without a server: encodings against hand-written bytes, and decoding
/// that refuses a value of the wrong length instead of reading past it.
@Suite struct PostgresBinaryTests {
    func encoded(_ v: PostgresValue, _ oid: UInt32) throws -> [UInt8] {
        var out: [UInt8] = []
        try PostgresBinary.encode(v, as: oid, into: &out)
        return out
    }

    func decoded(_ bytes: [UInt8], _ oid: UInt32) throws -> PostgresValue {
        try bytes.withUnsafeBytes { b throws(PostgresBinary.Failure) in try PostgresBinary.decode(b, type: oid) }
    }

    @Test func integersAreBigEndianAtTheParameterWidth() throws {
        #expect(try encoded(.int8(1), PostgresType.int8) == [0, 0, 0, 0, 0, 0, 0, 1])
        #expect(try encoded(.int8(-2), PostgresType.int4) == [0xff, 0xff, 0xff, 0xfe])
        #expect(try encoded(.int8(258), PostgresType.int2) == [1, 2])
        #expect(throws: PostgresBinary.Failure.self) { try encoded(.int8(40_000), PostgresType.int2) }
    }

    @Test func timestampsCountFrom2000() throws {
        #expect(try encoded(.timestamp(946_684_800_000_000), PostgresType.timestamptz) == [UInt8](repeating: 0, count: 8))
        let infinity = try encoded(.timestamp(.max), PostgresType.timestamptz)
        #expect(infinity == [0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff])
        #expect(try decoded([UInt8](repeating: 0, count: 8), PostgresType.timestamptz) == .timestamp(946_684_800_000_000))
    }

    @Test func anArrayIsOneDimensionWithLengthFramedElements() throws {
        let bytes = try encoded(.array([.bytea([7]), .null]), PostgresType.byteaArray)
        #expect(bytes == [0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 17, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 1, 7, 0xff, 0xff, 0xff, 0xff])
        #expect(throws: PostgresBinary.Failure.self) { try encoded(.array([1]), PostgresType.int8) }
    }

    @Test func aValueThatDoesNotMatchItsParameterTypeIsRefused() {
        #expect(throws: PostgresBinary.Failure.self) { try encoded(.text("x"), PostgresType.bytea) }
        #expect(throws: PostgresBinary.Failure.self) { try encoded(.bytea([1]), PostgresType.int8) }
        #expect(throws: PostgresBinary.Failure.self) { try encoded(.bool(true), PostgresType.text) }
    }

    @Test func decodingRefusesWrongLengthsAndBadText() {
        for (oid, length) in [(PostgresType.int8, 7), (PostgresType.int4, 8), (PostgresType.bool, 0), (PostgresType.timestamptz, 4)] {
            #expect(throws: PostgresBinary.Failure.self) { try decoded([UInt8](repeating: 1, count: length), oid) }
        }
        #expect(throws: PostgresBinary.Failure.self) { try decoded([0xff, 0xfe], PostgresType.text) }
        #expect(throws: PostgresBinary.Failure.self) { try decoded([1], 1700) }  // numeric
    }

    @Test func encodeThenDecodeIsTheIdentity() throws {
        let values: [(PostgresValue, UInt32)] = [
            (.int8(.min), PostgresType.int8), (.int8(-7), PostgresType.int2), (.bool(true), PostgresType.bool),
            (.float8(-0.25), PostgresType.float8), (.text("日本 ✓"), PostgresType.text), (.text("{}"), PostgresType.jsonb),
            (.bytea([0, 255]), PostgresType.bytea), (.timestamp(-123), PostgresType.timestamptz),
        ]
        for (v, oid) in values {
            let bytes = try encoded(v, oid)
            #expect(try decoded(bytes, oid) == v)
        }
    }
}

@Suite struct ShardHashTests {
    @Test func isFNV1a64() {
        // Published FNV-1a 64-bit test vectors.
        #expect(ShardHash.fnv1a([]) == 0xcbf2_9ce4_8422_2325)
        #expect(ShardHash.fnv1a(Array("a".utf8)) == 0xaf63_dc4c_8601_ec8c)
        #expect(ShardHash.fnv1a(Array("foobar".utf8)) == 0x8594_4171_f739_67e8)
    }

    @Test func spreadsTokensOverEveryShard() {
        var counts = [Int](repeating: 0, count: 16)
        for t in tokens(16_000) { counts[ShardHash.shard(of: t, count: 16)] += 1 }
        // 1000 expected per shard; a fair hash stays well within ±20 %.
        #expect(counts.allSatisfy { (800...1200).contains($0) })
    }
}

@Suite struct ReconnectBackoffTests {
    @Test func boundsDoubleUpToTheCap() {
        let b = ReconnectBackoff()
        #expect(
            (1...8).map { b.bound($0) } == [
                .milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800), .milliseconds(1600),
                .milliseconds(3200), .seconds(5), .seconds(5),
            ])
    }

    @Test func delaysStayWithinHalfTheBoundAndTheBound() {
        let b = ReconnectBackoff()
        var g = SystemRandomNumberGenerator()
        for n in 1...10 {
            for _ in 0..<100 {
                let d = b.delay(n, using: &g)
                #expect(d >= b.bound(n) / 2 && d <= b.bound(n))
            }
        }
    }
}
