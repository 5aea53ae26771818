import HeraldCore

/// A response as read off the wire by `RawConnection`.
struct RawResponse {
    var status: Int
    /// Lower-cased names.
    var headers: [String: String]
    var body: [UInt8]

    var text: String { String(decoding: body, as: UTF8.self) }
    var json: JSON? { try? JSON.parse(body) }
    /// `error.code` of a JSON error body.
    var errorCode: String? { json?["error"]?["code"]?.stringValue }
}
