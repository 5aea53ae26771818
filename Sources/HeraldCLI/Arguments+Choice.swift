extension Arguments {
    /// An option whose value must be one of `allowed` (nil when absent). Throws
    /// `UsageError` listing the allowed values.
    mutating func choice(_ name: String, _ allowed: [String]) throws -> String? {
        guard let v = try option(name) else { return nil }
        guard allowed.contains(v) else {
            throw UsageError("\(name) must be one of \(allowed.joined(separator: ", ")), got '\(v)'")
        }
        return v
    }
}
