import HeraldAPNS

/// `PushOutcome.classify`: what the sender makes of an APNs answer (a peer's bytes). The
/// first two input bytes pick the status (100...599), the next up to 16 the `retry-after`
/// value, the rest is the body. A retry delay from the peer is never negative or
/// non-finite when it is kept.
enum APNSResponseTarget {
    static func run(_ data: [UInt8]) {
        guard data.count >= 3 else { return }
        let status = 100 + (Int(data[0]) << 8 | Int(data[1])) % 500
        let raLength = Int(data[2] % 17)
        let raBytes = data.dropFirst(3).prefix(raLength)
        let retryAfter = raLength == 0 ? nil : String(decoding: raBytes, as: UTF8.self)
        let body = Array(data.dropFirst(3 + raBytes.count))
        let outcome = PushOutcome.classify(status: status, body: body, apnsID: nil, uniqueID: nil, retryAfter: retryAfter)
        switch outcome {
        case .delivered:
            FuzzCheck.expect([200, 201, 204].contains(status), "\(status) classified as delivered")
        case .retry(_, _, let after):
            if let after { FuzzCheck.expect(after.isFinite && after >= 0, "retry after \(after) s from '\(retryAfter ?? "")'") }
        default:
            FuzzCheck.expect(![200, 201, 204].contains(status), "\(status) not delivered")
        }
        _ = outcome.label
    }
}
