extension Duration {
    /// Whole milliseconds, rounded down, saturating.
    var milliseconds: Int64 {
        let (s, atto) = components
        let (ms, overflow) = s.multipliedReportingOverflow(by: 1000)
        return overflow ? (s < 0 ? .min : .max) : ms &+ atto / 1_000_000_000_000_000
    }

    /// Whole nanoseconds, saturating at zero and at `UInt64.max`.
    var nanoseconds: UInt64 {
        let (s, atto) = components
        if s < 0 { return 0 }
        let (ns, overflow) = UInt64(s).multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : ns &+ UInt64(atto / 1_000_000_000)
    }
}
