/// The type OIDs this module reads and writes (`pg_type.oid`; fixed since PostgreSQL 8).
enum PostgresType {
    static let bool: UInt32 = 16
    static let bytea: UInt32 = 17
    static let char: UInt32 = 18
    static let name: UInt32 = 19
    static let int8: UInt32 = 20
    static let int2: UInt32 = 21
    static let int4: UInt32 = 23
    static let text: UInt32 = 25
    static let oid: UInt32 = 26
    static let json: UInt32 = 114
    static let float8: UInt32 = 701
    static let unknown: UInt32 = 705
    static let bpchar: UInt32 = 1042
    static let varchar: UInt32 = 1043
    static let timestamp: UInt32 = 1114
    static let timestamptz: UInt32 = 1184
    static let void: UInt32 = 2278
    static let jsonb: UInt32 = 3802

    static let boolArray: UInt32 = 1000
    static let byteaArray: UInt32 = 1001
    static let int2Array: UInt32 = 1005
    static let int4Array: UInt32 = 1007
    static let textArray: UInt32 = 1009
    static let varcharArray: UInt32 = 1015
    static let int8Array: UInt32 = 1016

    /// The element type of an array type this module encodes, or nil.
    static func element(ofArray oid: UInt32) -> UInt32? {
        switch oid {
        case boolArray: bool
        case byteaArray: bytea
        case int2Array: int2
        case int4Array: int4
        case textArray: text
        case varcharArray: varchar
        case int8Array: int8
        default: nil
        }
    }

    /// The array type whose elements are `oid`, or nil.
    static func array(of oid: UInt32) -> UInt32? {
        switch oid {
        case bool: boolArray
        case bytea: byteaArray
        case int2: int2Array
        case int4: int4Array
        case text: textArray
        case varchar: varcharArray
        case int8: int8Array
        default: nil
        }
    }

    static func isText(_ oid: UInt32) -> Bool {
        oid == text || oid == varchar || oid == name || oid == bpchar || oid == json || oid == unknown
    }
}
