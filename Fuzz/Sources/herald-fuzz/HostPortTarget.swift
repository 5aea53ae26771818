import HeraldNet

/// `HostPort(parsing:)` (every --listen, --apns-host, HERALD_*_HOST value). A parsed value
/// has a non-empty host and a port in 0...65535, and its `description` parses back to the
/// same value when the host is a plain name or IP literal (a host made of other characters,
/// e.g. leading spaces inside brackets, has no canonical spelling to round-trip through).
enum HostPortTarget {
    static func run(_ data: [UInt8]) {
        let text = String(decoding: data, as: UTF8.self)
        for defaultPort in [nil, 443] as [Int?] {
            guard let hp = HostPort(parsing: text, defaultPort: defaultPort) else { continue }
            FuzzCheck.expect(!hp.host.isEmpty, "empty host from '\(text)'")
            FuzzCheck.expect((0...65535).contains(hp.port), "port \(hp.port) from '\(text)'")
            let plain = hp.host.utf8.allSatisfy { b in
                (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a) || b == 0x2e || b == 0x2d || b == 0x3a
                    || b == 0x5f
            }
            guard plain else { continue }
            FuzzCheck.expect(
                HostPort(parsing: hp.description) == hp, "'\(text)' -> \(hp) -> '\(hp.description)' reads back differently")
        }
    }
}
