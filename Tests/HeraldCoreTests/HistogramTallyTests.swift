import Testing

@testable import HeraldCore

/// A tally filled on one thread and added in bulk renders exactly what the same
/// observations made one by one render.
@Suite struct HistogramTallyTests {
    @Test func aTallyAddedInBulkRendersAsObservationsOneByOne() {
        let direct = Histogram(buckets: Histogram.latencySeconds)
        let bulk = Histogram(buckets: Histogram.latencySeconds)
        var tally = HistogramTally(for: bulk)
        // On a bound, between bounds, below the first, above the last.
        let xs: [Double] = [0.001, 0.0011, 0.0004, 0.05, 0.049, 61, 0, 2.5, 30]
        for x in xs {
            direct.observe(x)
            tally.observe(x)
        }
        #expect(tally.count == UInt64(xs.count))
        #expect(bulk.count == 0, "nothing reaches the histogram before the flush")
        bulk.add(&tally)
        #expect(tally.count == 0)
        #expect(bulk.render(name: "h", labelKey: "") == direct.render(name: "h", labelKey: ""))
        // A second flush adds only what came after the first.
        tally.observe(0.003)
        direct.observe(0.003)
        bulk.add(&tally)
        bulk.add(&tally)
        #expect(bulk.render(name: "h", labelKey: "") == direct.render(name: "h", labelKey: ""))
    }
}
