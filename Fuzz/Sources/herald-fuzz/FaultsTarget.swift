import HeraldSimulator

/// `SimulatorFaults.parse`: the `--faults` flag of `herald apns-sim` and the body of the
/// simulator's `PUT /faults`. Accepted faults must be usable: rates are probabilities,
/// delays are seconds a loop timer can hold (the event loop turns them into UInt64
/// nanoseconds), and `spec` reads back to the same faults.
enum FaultsTarget {
    static func run(_ data: [UInt8]) {
        let spec = String(decoding: data, as: UTF8.self)
        guard case .success(let f) = SimulatorFaults.parse(spec) else { return }
        check(f, from: spec)
        guard case .success(let again) = SimulatorFaults.parse(f.spec) else {
            FuzzCheck.fail("'\(spec)' parsed, but its spec '\(f.spec)' does not")
        }
        // latency and slow-read go through "ms" and back: equal up to rounding.
        func close(_ a: Double, _ b: Double) -> Bool { a == b || abs(a - b) <= 1e-9 * max(abs(a), abs(b)) }
        FuzzCheck.expect(
            again.errorRates == f.errorRates && close(again.latency, f.latency) && again.goAwayAfterStreams == f.goAwayAfterStreams
                && again.goAwayReason == f.goAwayReason && again.deadTokenRate == f.deadTokenRate
                && again.badTokenRate == f.badTokenRate && again.retryAfter == f.retryAfter && close(again.slowRead, f.slowRead)
                && again.streamsAfterError == f.streamsAfterError,
            "'\(spec)' -> '\(f.spec)' reads back as '\(again.spec)'")
    }

    static func check(_ f: SimulatorFaults, from spec: String) {
        for (status, p) in f.errorRates {
            FuzzCheck.expect((400...599).contains(status) && p >= 0 && p <= 1, "'\(spec)': rate \(status)=\(p)")
        }
        for (name, r) in [("dead-rate", f.deadTokenRate), ("bad-token-rate", f.badTokenRate)] {
            FuzzCheck.expect(r >= 0 && r <= 1, "'\(spec)': \(name) \(r)")
        }
        for (name, s) in [("latency", f.latency), ("slow-read", f.slowRead)] {
            FuzzCheck.expect(s.isFinite && s >= 0 && s * 1e9 < Double(UInt64.max), "'\(spec)': \(name) of \(s) s fits no timer")
        }
    }
}
