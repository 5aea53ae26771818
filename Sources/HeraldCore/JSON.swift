import Foundation

/// A JSON value. Parsing and printing go through Foundation's `JSONDecoder`/`JSONEncoder`
/// (no hand-written JSON engine); this type only gives the tree a Swift shape.
///
/// Integers are kept apart from doubles so that `aps.timestamp` and friends round-trip as
/// integers, which APNs requires (reference §7.1).
public enum JSON: Sendable, Hashable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSON])
    case object([String: JSON])
}

extension JSON: Codable {
    public init(from decoder: Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() {
            self = .null
        } else if let b = try? c.decode(Bool.self) {
            self = .bool(b)
        } else if let i = try? c.decode(Int64.self) {
            self = .int(i)
        } else if let d = try? c.decode(Double.self) {
            self = .double(d)
        } else if let s = try? c.decode(String.self) {
            self = .string(s)
        } else if let a = try? c.decode([JSON].self) {
            self = .array(a)
        } else {
            self = .object(try c.decode([String: JSON].self))
        }
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .null: try c.encodeNil()
        case .bool(let b): try c.encode(b)
        case .int(let i): try c.encode(i)
        case .double(let d): try c.encode(d)
        case .string(let s): try c.encode(s)
        case .array(let a): try c.encode(a)
        case .object(let o): try c.encode(o)
        }
    }
}

/// Thrown by `JSON.parse` when the bytes are not JSON.
public struct JSONParseError: Error, Sendable {
    public let message: String
}

extension JSON {
    /// Parses UTF-8 JSON. Throws `JSONParseError` on malformed input (depth is bounded by
    /// Foundation's decoder, so hostile nesting fails instead of overflowing the stack).
    public static func parse(_ bytes: some DataProtocol) throws(JSONParseError) -> JSON {
        do {
            return try JSONDecoder().decode(JSON.self, from: Data(bytes))
        } catch {
            throw JSONParseError(message: "the body is not valid JSON")
        }
    }

    /// Parses a UTF-8 string as JSON.
    public static func parse(_ text: String) throws(JSONParseError) -> JSON {
        try parse(Data(text.utf8))
    }

    /// Compact UTF-8 encoding with sorted keys (stable bytes for the same tree).
    public func encoded() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding a JSON tree cannot fail: every case maps to a JSON value, and doubles
        // come from a parser that rejects NaN and infinities.
        let data = (try? encoder.encode(self)) ?? Data("null".utf8)
        return [UInt8](data)
    }

    /// `encoded()` as a String.
    public var text: String { String(decoding: encoded(), as: UTF8.self) }

    public subscript(key: String) -> JSON? {
        if case .object(let o) = self { return o[key] }
        return nil
    }

    public var objectValue: [String: JSON]? {
        if case .object(let o) = self { return o }
        return nil
    }

    public var arrayValue: [JSON]? {
        if case .array(let a) = self { return a }
        return nil
    }

    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    public var boolValue: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    /// The value as an integer when it is one (a double with no fraction counts).
    public var intValue: Int64? {
        switch self {
        case .int(let i): return i
        case .double(let d) where d.rounded() == d && abs(d) < 9.0e15: return Int64(d)
        default: return nil
        }
    }

    public var numberValue: Double? {
        switch self {
        case .int(let i): return Double(i)
        case .double(let d): return d
        default: return nil
        }
    }

    /// The JSON type name, for error messages ("expected a string, got number").
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "boolean"
        case .int, .double: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }
}

extension JSON: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByDictionaryLiteral, ExpressibleByArrayLiteral, ExpressibleByFloatLiteral, ExpressibleByNilLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(nilLiteral: ()) { self = .null }
    public init(dictionaryLiteral elements: (String, JSON)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
    public init(arrayLiteral elements: JSON...) { self = .array(elements) }
}

extension JSON {
    /// Convenience for building objects with optional members: nil values are left out.
    public static func object(_ pairs: [(String, JSON?)]) -> JSON {
        var o: [String: JSON] = [:]
        for (k, v) in pairs { if let v { o[k] = v } }
        return .object(o)
    }

    public init(_ s: String) { self = .string(s) }
    public init(_ i: Int) { self = .int(Int64(i)) }
    public init(_ i: Int64) { self = .int(i) }
}
