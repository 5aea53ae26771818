/// One SQLite value, as bound to a parameter or read from a column.
///
/// SQLite's five storage classes. Booleans are integers (`true` is 1); times are integers
/// (milliseconds since 1970) by Herald's convention, never text.
public enum SQLValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])
}

extension SQLValue {
    /// A Swift `Int` as `.integer`.
    public static func int(_ value: Int) -> SQLValue { .integer(Int64(value)) }

    /// `true` as 1, `false` as 0.
    public static func bool(_ value: Bool) -> SQLValue { .integer(value ? 1 : 0) }

    /// `.null` when `value` is nil, else the wrapped value.
    public static func optional(_ value: SQLValue?) -> SQLValue { value ?? .null }

    /// True for `.null`.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// The integer, or nil when the value is not `.integer`.
    public var int64Value: Int64? {
        if case .integer(let v) = self { return v }
        return nil
    }

    /// The integer as `Int`, or nil when the value is not `.integer`.
    public var intValue: Int? { int64Value.map { Int($0) } }

    /// The number: `.real`, or `.integer` converted; nil otherwise.
    public var doubleValue: Double? {
        switch self {
        case .real(let v): v
        case .integer(let v): Double(v)
        default: nil
        }
    }

    /// The text, or nil when the value is not `.text`.
    public var textValue: String? {
        if case .text(let v) = self { return v }
        return nil
    }

    /// The bytes, or nil when the value is not `.blob`.
    public var blobValue: [UInt8]? {
        if case .blob(let v) = self { return v }
        return nil
    }

    /// An integer read as a boolean (non-zero is true); nil when not `.integer`.
    public var boolValue: Bool? { int64Value.map { $0 != 0 } }
}

extension SQLValue: ExpressibleByNilLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByStringLiteral, ExpressibleByBooleanLiteral
{
    public init(nilLiteral: ()) { self = .null }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(floatLiteral value: Double) { self = .real(value) }
    public init(stringLiteral value: String) { self = .text(value) }
    public init(booleanLiteral value: Bool) { self = .integer(value ? 1 : 0) }
}
