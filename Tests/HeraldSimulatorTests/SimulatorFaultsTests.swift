import Testing

@testable import HeraldSimulator

@Suite struct SimulatorFaultsTests {
    @Test func faultSpecRoundTrips() throws {
        let f = try SimulatorFaults.parse("500=0.05,503=0.1,latency-ms=5,goaway-after=1000,dead-rate=0.01,retry-after=2").get()
        #expect(f.errorRates == [500: 0.05, 503: 0.1])
        #expect(f.goAwayAfterStreams == 1000)
        #expect(try SimulatorFaults.parse(f.spec).get() == f)
        guard case .failure = SimulatorFaults.parse("bogus=1") else {
            Issue.record("an unknown fault was accepted")
            return
        }
    }
}
