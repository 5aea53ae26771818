/// One PostgreSQL value, as bound to a parameter or read from a column (both in binary).
///
/// Parameters are encoded for the type the server inferred for them (an `.int8` binds to
/// an `int2`, `int4` or `int8` parameter, range-checked; `.text` to `text`, `varchar`,
/// `name`, `json`, `jsonb`). Results decode `int2`/`int4`/`int8`/`oid` to `.int8`,
/// `text`-like types to `.text`, `timestamptz`/`timestamp` to `.timestamp`.
public enum PostgresValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case int8(Int64)
    case float8(Double)
    case text(String)
    case bytea([UInt8])
    /// Microseconds since 1970-01-01 UTC (`timestamptz`); `Int64.max`/`.min` are
    /// PostgreSQL's `infinity`/`-infinity`.
    case timestamp(Int64)
    /// A one-dimensional array (`int8[]`, `bytea[]`, `text[]`, `bool[]`), for
    /// `unnest($1::bytea[])` and `= ANY($1)`. Elements may be `.null`.
    case array([PostgresValue])
}

extension PostgresValue {
    /// A Swift `Int` as `.int8`.
    public static func int(_ value: Int) -> PostgresValue { .int8(Int64(value)) }

    /// True for `.null`.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// The integer, or nil when the value is not `.int8`.
    public var int64Value: Int64? {
        if case .int8(let v) = self { return v }
        return nil
    }

    /// The integer as `Int`, or nil when the value is not `.int8`.
    public var intValue: Int? { int64Value.map { Int($0) } }

    /// The number, or nil when the value is not `.float8`.
    public var doubleValue: Double? {
        if case .float8(let v) = self { return v }
        return nil
    }

    /// The text, or nil when the value is not `.text`.
    public var textValue: String? {
        if case .text(let v) = self { return v }
        return nil
    }

    /// The bytes, or nil when the value is not `.bytea`.
    public var byteaValue: [UInt8]? {
        if case .bytea(let v) = self { return v }
        return nil
    }

    /// The boolean, or nil when the value is not `.bool`.
    public var boolValue: Bool? {
        if case .bool(let v) = self { return v }
        return nil
    }

    /// Microseconds since 1970, or nil when the value is not `.timestamp`.
    public var timestampMicros: Int64? {
        if case .timestamp(let v) = self { return v }
        return nil
    }
}

extension PostgresValue: ExpressibleByNilLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByStringLiteral, ExpressibleByBooleanLiteral
{
    public init(nilLiteral: ()) { self = .null }
    public init(integerLiteral value: Int64) { self = .int8(value) }
    public init(floatLiteral value: Double) { self = .float8(value) }
    public init(stringLiteral value: String) { self = .text(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}
