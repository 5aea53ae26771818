/// Observations of one thread, added to a `Histogram` in bulk (`Histogram.add(_:)`): a hot
/// loop that observes per request touches no shared atomic until it flushes, once per turn.
/// A value type owned by one thread; not thread-safe.
public struct HistogramTally: Sendable {
    let bounds: [Double]
    var counts: [UInt64]
    var total: UInt64 = 0
    var sumMicros: UInt64 = 0

    /// An empty tally with `histogram`'s buckets.
    public init(for histogram: Histogram) {
        bounds = histogram.bounds
        counts = Array(repeating: 0, count: histogram.bounds.count)
    }

    /// Observations not added yet.
    public var count: UInt64 { total }

    /// Counts `x` (as `Histogram.observe` would).
    @inline(__always)
    public mutating func observe(_ x: Double) {
        // Through the buffer: no bounds check per bucket (it runs once per APNs answer).
        let i = bounds.withUnsafeBufferPointer { b in
            var i = 0
            while i < b.count && x > b[i] { i += 1 }
            return i
        }
        if i < counts.count { counts[i] += 1 }
        total += 1
        sumMicros &+= UInt64(max(0, x) * 1e6)
    }
}

extension Histogram {
    /// Adds everything `tally` counted and empties it. Any thread.
    public func add(_ tally: inout HistogramTally) {
        guard tally.total > 0 else { return }
        precondition(tally.bounds == bounds, "a tally of another histogram")
        for i in 0..<tally.counts.count where tally.counts[i] > 0 {
            counts[i].inc(tally.counts[i])
            tally.counts[i] = 0
        }
        addTotals(count: tally.total, sumMicros: tally.sumMicros)
        tally.total = 0
        tally.sumMicros = 0
    }
}
